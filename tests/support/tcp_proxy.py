"""A TCP proxy in front of a test server that breaks the network on demand (real sockets).

The client connects to the proxy; every connection is pumped to the server by two threads. The
faults are those of a real network, not of a patched client:

- ``cut()``: every open connection is reset at once (a dropped link; the client reconnects);
- ``lose_answers(seconds)``: what the server sends is thrown away while the client's bytes
  still reach it (an update arrives, its confirmation is lost), then the connections are cut
  and new ones refused until ``seconds`` have passed;
- ``outage(seconds)``: connections cut and new ones refused for ``seconds``;
- ``delay``: what the client sends reaches the server that many seconds late (a slow link);
- ``silence()``: nothing passes either way and the connections stay open, so neither end can
  tell (a laptop asleep, a Wi-Fi gone dead), until ``heal()`` resets them (the bytes lost in
  between broke their streams) and lets new ones in.

    with TcpProxy(server.port) as proxy:
        doc = open_live(proxy.url, token, path)
        proxy.lose_answers(5.0)
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from types import TracebackType
from typing import Self


class _Link:
    def __init__(self, client: socket.socket, server: socket.socket) -> None:
        self.client = client
        self.server = server
        self.lose_answers = False
        self.silent = False

    def close(self) -> None:
        for sock in (self.client, self.server):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()


class TcpProxy:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/"
        self._links: set[_Link] = set()
        self._mutex = threading.Lock()
        self._refuse_until = 0.0
        self._closed = False
        #: Seconds each chunk the client sends waits before it goes on to the server.
        self.delay = 0.0
        threading.Thread(target=self._accept, name="test-proxy", daemon=True).start()

    # -- faults ----------------------------------------------------------------------------
    def cut(self) -> None:
        with self._mutex:
            links, self._links = self._links, set()
        for link in links:
            link.close()

    def outage(self, seconds: float) -> None:
        self._refuse_until = time.monotonic() + seconds
        self.cut()

    def silence(self) -> None:
        with self._mutex:
            for link in self._links:
                link.silent = True
        self._refuse_until = float("inf")

    def heal(self) -> None:
        self._refuse_until = 0.0
        self.cut()

    def lose_answers(self, seconds: float) -> None:
        with self._mutex:
            for link in self._links:
                link.lose_answers = True
        self._refuse_until = time.monotonic() + seconds
        threading.Timer(seconds, self.cut).start()

    # -- pumping ---------------------------------------------------------------------------
    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if time.monotonic() < self._refuse_until:
                client.close()
                continue
            try:
                server = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            link = _Link(client, server)
            with self._mutex:
                self._links.add(link)
            threading.Thread(target=self._pump, args=(link, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(link, False), daemon=True).start()

    def _pump(self, link: _Link, upstream: bool) -> None:
        source, sink = (link.client, link.server) if upstream else (link.server, link.client)
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if link.silent or (not upstream and link.lose_answers):
                    continue
                if upstream and self.delay:
                    time.sleep(self.delay)
                sink.sendall(data)
        except OSError:
            pass
        finally:
            link.close()
            with self._mutex:
                self._links.discard(link)

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept
        with contextlib.suppress(OSError):
            self._listener.close()
        self.cut()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
