"""Sockets that listen and count who connects: what a sandboxed command must never reach."""

from __future__ import annotations

import contextlib
import socket
import threading


class CountingListener:
    """A real listening socket (loopback TCP by default, or AF_UNIX at a path or an abstract
    name) that accepts on a thread, counts each connection and answers it with ``greeting``."""

    def __init__(
        self,
        family: socket.AddressFamily = socket.AF_INET,
        address: str | bytes | tuple[str, int] = ("127.0.0.1", 0),
        greeting: bytes = b"",
    ) -> None:
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.bind(address)
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port: int = self.sock.getsockname()[1] if family == socket.AF_INET else 0
        self.greeting = greeting
        self.count = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.count += 1
            if self.greeting:
                with contextlib.suppress(OSError):
                    conn.sendall(self.greeting)
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()
