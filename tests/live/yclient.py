"""A second collaboration client written directly on pycrdt + websocket-client, independent of
planbook's LiveNotebook: it plays the other person in the room, and the benchmark's baseline."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import websocket
from jupyter_ydoc import YNotebook
from pycrdt import (
    Array,
    Decoder,
    Doc,
    Encoder,
    Map,
    create_sync_message,
    create_update_message,
    handle_sync_message,
)

from planbook.documents.live.room import quick_ack
from tests.support.jupyter_server import RunningServer


class YClient:
    """Joins a notebook's room; ``edit(fn)`` runs ``fn(ynotebook)`` in one transaction and sends
    the update; a background thread applies everyone else's updates."""

    def __init__(self, server: RunningServer, path: str, *, via: str | None = None) -> None:
        """``via``: the base URL the room's websocket goes through (a TcpProxy's)."""
        info = server.api(
            "PUT", f"api/collaboration/session/{path}", {"format": "json", "type": "notebook"}
        )
        self.doc: Doc[Any] = Doc(allow_multithreading=True)
        self.ynb = YNotebook(self.doc)
        self.cells_array: Array[Any] = self.doc.get("cells", type=Array)
        self.meta: Map[Any] = self.doc.get("meta", type=Map)
        self.lock = threading.Condition()
        self.answers = 0
        self.updates = 0  # update messages received from the room
        self.replies: list[dict[str, Any]] = []  # the server's answers to save()
        url = server.ws_url(
            f"api/collaboration/room/json:notebook:{info['fileId']}?sessionId={info['sessionId']}"
        )
        if via is not None:
            url = url.replace(server.url.replace("http", "ws", 1), via.replace("http", "ws", 1))
        self.ws = websocket.create_connection(url, enable_multithread=True)
        self.ws.send_binary(create_sync_message(self.doc))
        self.thread = threading.Thread(target=self._pump, daemon=True)
        self.thread.start()
        self.wait(lambda: self.answers >= 1, 10)

    def _pump(self) -> None:
        while True:
            try:
                opcode, data = self.ws.recv_data()
            except Exception:
                return
            quick_ack(self.ws)  # as LiveNotebook does: tornado leaves Nagle on
            if opcode == 2 and data and data[0] == 2:  # a reply to save()
                with self.lock:
                    self.replies.append(json.loads(Decoder(bytes(data[1:])).read_var_string()))
                    self.lock.notify_all()
                continue
            if opcode != 2 or not data or data[0] != 0:
                continue
            with self.lock:
                reply = handle_sync_message(bytes(data[1:]), self.doc)
                if reply is not None:
                    self.ws.send_binary(reply)
                if data[1] == 1:
                    self.answers += 1
                elif data[1] == 2:
                    self.updates += 1
                self.lock.notify_all()

    def wait(self, predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        with self.lock:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.lock.wait(left)
            return True

    def edit(self, fn: Callable[[YNotebook], None]) -> None:
        self.deliver(self.prepare(fn))

    def prepare(self, fn: Callable[[YNotebook], None]) -> bytes:
        """Make an edit here without sending it yet (a person's edit still on the network):
        ``deliver`` it later, after whatever it should race."""
        with self.lock:
            before = self.doc.get_state()
            with self.doc.transaction():
                fn(self.ynb)
            return self.doc.get_update(before)

    def deliver(self, update: bytes) -> None:
        with self.lock:
            self.ws.send_binary(create_update_message(update))

    def flush(self) -> None:
        """Wait until the server has applied everything sent so far."""
        with self.lock:
            target = self.answers + 1
            self.ws.send_binary(create_sync_message(self.doc))
        assert self.wait(lambda: self.answers >= target, 10)

    def save(self, timeout: float = 10.0) -> str:
        """Ask the server to save the room now, as JupyterLab's save does, and wait for its
        answer ("success", "skipped", "failed"; "" when none came): it comes after everything
        sent before it was applied (the server handles a client's messages in order)."""
        number = len(self.replies) + 1000
        encoder = Encoder()
        encoder.write_var_uint(2)
        encoder.write_var_string("save")
        encoder.write_var_uint(number)
        with self.lock:
            self.ws.send_binary(encoder.to_bytes())
        found: list[str] = []

        def answered() -> bool:
            found[:] = [str(r.get("status")) for r in self.replies if r.get("responseTo") == number]
            return bool(found)

        self.wait(answered, timeout)
        return found[0] if found else ""

    def cells(self) -> list[dict[str, Any]]:
        with self.lock:
            return [dict(c) for c in (self.cells_array.to_py() or [])]

    def sources(self) -> list[str]:
        return [str(c["source"]) for c in self.cells()]

    def ids(self) -> list[str]:
        return [str(c["id"]) for c in self.cells()]

    def metadata(self) -> dict[str, Any]:
        with self.lock:
            meta = self.meta.to_py() or {}
        return dict(meta.get("metadata") or {})

    def wait_for(self, predicate: Callable[[YClient], bool], timeout: float = 10.0) -> bool:
        return self.wait(lambda: predicate(self), timeout)

    def set_source(self, cell_id: str, source: str) -> None:
        def change(ynb: YNotebook) -> None:
            index = [c["id"] for c in ynb.ycells].index(cell_id)
            ynb.set_cell(index, source=source)

        self.edit(change)

    def close(self) -> None:
        self.ws.close()
        self.thread.join(5)


class UpdatesSeen:
    """Every update ``client``'s copy applies from now on, replayed one by one on a copy of
    its state now: ``states()`` gives (cells, notebook metadata) as plain JSON after each, so
    a test can say what the other person's page held at every moment, not only at the end."""

    def __init__(self, client: YClient) -> None:
        self._client = client
        self._start = client.doc.get_update()
        self._updates: list[bytes] = []
        self._subscription = client.doc.observe(lambda event: self._updates.append(event.update))

    def states(self) -> list[tuple[list[dict[str, Any]], dict[str, Any]]]:
        """Stops recording; the states after each update, in order."""
        self._client.doc.unobserve(self._subscription)
        copy: Doc[Any] = Doc()
        copy.apply_update(self._start)
        cells, meta = copy.get("cells", type=Array), copy.get("meta", type=Map)
        out = []
        for update in self._updates:
            copy.apply_update(update)
            metadata = dict((meta.to_py() or {}).get("metadata") or {})
            out.append(([dict(c) for c in cells.to_py() or []], metadata))
        return out
