"""A connection to one jupyter-collaboration room: a local pycrdt copy kept in sync by a thread.

No notebook logic here, only the Yjs sync protocol over the room's websocket (websocket-client):
join (``address.RoomAddress.open_session``, then the websocket), apply what others send, send our
updates, and *confirm* them: a sync request sent after an update is answered only once the
server applied the update (it handles a client's messages in order), so one request confirms
every update sent before it; an update can go without a request of its own until someone
waits for it (``post(..., ask=False)``). Connection loss is retried
with backoff; after a server restart the copy is reloaded from the server rather than merged
(a room rebuilt from the file has new CRDT items: a merge would duplicate text), and updates not
yet confirmed are handed back to the owner to replay.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time
import urllib.error
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from planbook.documents.collector import collector_paused
from planbook.documents.live.address import RoomAddress
from planbook.documents.live.shared_copy import SharedCopy
from planbook.errors import LiveConnectionError

log = logging.getLogger("planbook.live")

_SYNC, _RAW = 0, 2  # message types (1 is awareness, ignored)
_STEP1, _STEP2, _UPDATE = 0, 1, 2
_CLOSE_OPCODE, _BINARY_OPCODE = 8, 2


#: Updates posted without a request (``post(..., ask=False)``) are confirmed by the next one;
#: a request goes at least after this many of them, so what a reload would replay stays short.
ASK_EVERY = 16


@dataclass
class Ticket:
    """A sent update waiting for the server's confirmation; ``payload`` is the owner's, to
    replay after a reload."""

    payload: Any
    generation: int
    needs: int | None = None  # the answer count that confirms it, in ``generation``
    done: bool = False


def quick_ack(ws: Any) -> None:
    """Acknowledge TCP segments at once. The server (tornado) leaves Nagle on, so its answer
    to our sync request waits behind the echo of our own update until that is acknowledged:
    with delayed ACKs that costs 40 ms per commit (Linux only; elsewhere a no-op)."""
    option = getattr(socket, "TCP_QUICKACK", None)
    sock = getattr(ws, "sock", None)
    if option is not None and sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, option, 1)


class Room(SharedCopy):
    """The synced copy. Hold ``cond`` to read or change ``doc``; ``version`` grows with every
    real change. ``replay(payloads)`` is called (holding ``cond``) after a reload with what was
    sent but not confirmed, and returns the update that re-applies it."""

    def __init__(
        self,
        address: RoomAddress,
        replay: Callable[[list[Any]], bytes],
        *,
        connect_timeout: float = 15.0,
    ) -> None:
        self.address = address
        self.replay = replay
        self.connect_timeout = connect_timeout
        self.cond = threading.Condition(threading.RLock())
        self.version = 0
        self.connected = False
        self.last_error = ""
        #: Lists that collect every update received from the room while they are in here, each
        #: with whether it was relayed (True: one transaction of a client as the server applied
        #: it, in the server's order; False: an answer to a sync request, with every deletion
        #: the server knows, whoever made it).
        self.recorders: list[list[tuple[bool, bytes]]] = []
        #: The copy was emptied for a reload and the server's document has not arrived yet
        #: (one round trip after the reconnect): a reader waits for it (``wait_loaded``)
        #: rather than take an empty notebook for the room's.
        self.loading = False
        super().__init__()  # the copy: doc, cells, meta, reloads...
        self._listeners: list[Callable[[], None]] = []
        self._ws: Any = None
        #: The connection the sync thread is reading from (None between connections).
        self._reading: Any = None
        self._generation = 0
        self._reset_next = False  # the next connection starts from a fresh copy
        self._reset_why = ""
        self._asked = self._answered = 0  # sync requests sent / answered on this connection
        self._tickets: list[Ticket] = []
        self._saves: dict[int, str | None] = {}
        self._closed = False
        self._refused = False  # refused for a reason retrying does not fix
        try:  # fail at once on what retrying cannot fix (no such notebook, wrong token)
            self._file_id, self._session_id = address.open_session()
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                raise LiveConnectionError(
                    f"the Jupyter server {address.server_url} has no file {address.path!r}; "
                    "check the path (relative to the server's root)"
                ) from None
            raise LiveConnectionError(
                f"the server {address.server_url} refused the collaboration session of "
                f"{address.path!r} (HTTP {exc.code} {exc.reason}); check the path and token"
            ) from None
        except OSError as exc:
            raise LiveConnectionError(
                f"cannot reach the Jupyter server {address.server_url} ({exc}); is it running?"
            ) from None
        self._thread = threading.Thread(target=self._run, name="planbook-live", daemon=True)
        self._thread.start()
        if not self.wait(lambda: self.connected or self._refused, connect_timeout) or (
            not self.connected
        ):
            self.close()
            raise LiveConnectionError(
                f"could not open the collaboration room of {address.path!r} on "
                f"{address.server_url} ({self.last_error or 'timed out'}); check that the "
                "server runs with jupyter-collaboration and has this notebook, or use the "
                "file backend"
            )

    # -- for the owner ---------------------------------------------------------------------

    def wait(self, predicate: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self.cond:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0 or self._closed:
                    return predicate()
                self.cond.wait(min(left, 0.5))
            return True

    def wait_loaded(self) -> None:
        """Before a read of the copy (holding ``cond``): while a reload is under way, wait
        (bounded) for the server's document. A step's end read in that window found its cell
        missing from an empty copy, and recorded the step done without its outputs.
        LiveConnectionError when it does not come. The sync thread never waits here (its
        listeners and the replay read what it holds)."""
        if not self.loading or threading.current_thread() is self._thread:
            return
        if not self.wait(lambda: not self.loading, self.connect_timeout):
            raise LiveConnectionError.nothing_applied(
                f"the collaboration room of {self.address.path!r} is being reloaded from the "
                f"server and its document did not arrive ({self.last_error or 'no answer'}); "
                "nothing was applied: retry"
            )

    def sync(self, timeout: float) -> bool:
        """Fetch everything the server has now (one round trip, after waiting up to
        ``timeout`` for a connection); False when that fails. A connection lost during the
        round trip is waited for and asked again (within ``timeout``): a short cut is not an
        unreachable room."""
        mine = threading.current_thread() is self._thread
        deadline = time.monotonic() + timeout
        while True:
            with self.cond:
                left = 0.0 if mine else max(0.0, deadline - time.monotonic())
                if not self.wait(lambda: self.connected, left):
                    return False
                generation = self._generation
                try:
                    number: int | None = self._ask()
                except Exception:  # the socket broke: the sync thread reconnects
                    number = None
            if number is not None and self._answer(generation, number, deadline):
                return True
            if mine or time.monotonic() >= deadline:
                return False
            with self.cond:  # let the broken connection be noticed before asking again
                if self._generation == generation and self.connected:
                    self.cond.wait(0.05)

    def _answer(self, generation: int, number: int, deadline: float) -> bool:
        """Wait for the answer to sync request ``number`` of connection ``generation``."""
        self.wait(
            lambda: self._generation != generation or self._answered >= number,
            max(0.0, deadline - time.monotonic()),
        )
        return self._generation == generation and self._answered >= number

    def ask(self) -> tuple[int, int] | None:
        """Send a sync request now, without waiting (None when not connected): its answer
        brings what the server had when it got the request, and confirms everything sent
        before it. Wait for it with ``answered``."""
        with self.cond:
            if not self.connected:
                return None
            try:
                return self._generation, self._ask()
            except Exception:
                return None

    def answered(
        self, asked: tuple[int, int], timeout: float, *, while_connected: bool = False
    ) -> bool:
        """Whether the answer to ``ask()``'s request came (waiting up to ``timeout``, or only
        while connected), on the same connection."""
        generation, number = asked

        def settled() -> bool:
            if while_connected and not self.connected:
                return True
            return self._generation != generation or self._answered >= number

        return (
            self.wait(settled, timeout)
            and self._generation == generation
            and self._answered >= number
        )

    def send(self, update: bytes, payload: Any, timeout: float) -> None:
        """Send an update the owner just applied to ``doc`` (holding ``cond``... or not) and
        wait until the server confirms it. Raises LiveConnectionError when it does not."""
        self.confirm(self.post(update, payload), timeout)

    def post(self, update: bytes, payload: Any, *, ask: bool = True) -> Ticket:
        """Send an update the owner just applied to ``doc`` without waiting for it: its ticket
        is done once the server answers the sync request sent right after it, or any later
        request (the server answers a client's messages in order). Until then it is replayed
        after a reload, like any unconfirmed update. ``ask=False``: no request of its own (one
        message instead of two, and no answer for the server to compute): the next request
        confirms it, whoever sends it (``confirm`` does when nobody has)."""
        from pycrdt import create_update_message  # heavy: pycrdt (the live extra)

        with self.cond:
            ticket = Ticket(payload=payload, generation=self._generation)
            self._tickets.append(ticket)
            try:
                if update:
                    self._send(create_update_message(update))
                unasked = sum(1 for t in self._tickets if t.needs is None)
                if ask or unasked >= ASK_EVERY:
                    self._ask()
            except Exception as exc:  # the socket broke: the reconnect sends it again
                log.debug("send failed, waiting for the reconnect: %r", exc)
        return ticket

    def confirm(self, ticket: Ticket, timeout: float) -> None:
        """Wait until the server has the update of ``ticket``; LiveConnectionError if not."""
        with self.cond:
            if ticket.needs is None and not ticket.done and self.connected:
                with contextlib.suppress(Exception):  # broken: the reconnect asks again
                    self._ask()
        if self.wait(lambda: ticket.done, timeout):
            return
        with self.cond:
            if ticket.done:
                return
            # Unknown whether the server has it: reload on reconnect rather than push, later,
            # a change the caller was told failed (asked twice: already taken out)
            if ticket in self._tickets:
                self._tickets.remove(ticket)
            self._reset_next = True
            self._drop_connection()
        raise LiveConnectionError(
            f"lost the collaboration room of {self.address.path!r} while applying a change "
            f"({self.last_error or 'no answer'}); the server may not have it: look at the "
            "notebook, then retry"
        )

    def save(self, timeout: float) -> str:
        """Ask the server to save the room to disk now; its status: "success" (the file was
        written), "skipped" (the room was busy loading), "failed", "not written" or "lost"
        (the connection broke before the answer: ask again).

        "success" alone proves nothing: jupyter-collaboration 5 answers it whenever its save
        task ENDS, and that task swallows its own cancellation (a stop of the room, or any
        change arriving before the write starts, cancels it) and its errors. Only a save that
        wrote the file sets the room's state ``hash``; so a "success" counts only when a sync
        round trip after it shows a ``hash`` written since the request."""
        from pycrdt import Encoder  # heavy: pycrdt (the live extra)

        with self.cond:
            if not self.wait(lambda: self.connected, timeout):
                raise LiveConnectionError(
                    f"could not ask the server to save {self.address.path!r}: the room is "
                    f"unreachable ({self.last_error or 'no answer'})"
                )
            generation, writes = self._generation, self.hash_writes
            save_id = len(self._saves) + 1
            self._saves[save_id] = None
            encoder = Encoder()
            encoder.write_var_uint(_RAW)
            encoder.write_var_string("save")
            encoder.write_var_uint(save_id)
            try:
                self._send(encoder.to_bytes())
            except Exception as exc:
                raise LiveConnectionError(
                    f"could not ask the server to save {self.address.path!r} ({exc})"
                ) from None
        if not self.wait(
            lambda: self._saves.get(save_id) is not None or self._generation != generation,
            timeout,
        ):
            raise LiveConnectionError(
                f"the server did not confirm saving {self.address.path!r}; it saves on its "
                "own about a second after each change"
            )
        status = self._saves.get(save_id)
        if status is None:
            return "lost"
        if status == "success" and not (self.sync(timeout) and self.hash_writes != writes):
            return "not written"
        return status

    def subscribe(self, callback: Callable[[], None]) -> Callable[[], None]:
        self._listeners.append(callback)
        return lambda: self._listeners.remove(callback) if callback in self._listeners else None

    def changed(self) -> None:
        """Note a change of ``doc`` (call holding ``cond``)."""
        self.version += 1
        self.cond.notify_all()
        for listener in list(self._listeners):
            try:
                listener()
            except Exception:  # a listener must not stop the sync
                log.exception("planbook live listener failed")

    def close(self) -> None:
        with self.cond:
            self._closed = True
            self._drop_connection()
            self.cond.notify_all()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(5)
        if not self._thread.is_alive():  # (else its sync may still apply an update)
            with self.cond:
                self.stop_observing()

    # -- the sync thread ---------------------------------------------------------------------

    def _send(self, message: bytes) -> None:
        ws = self._ws
        if ws is None:
            raise ConnectionError("not connected")
        ws.send_binary(message)

    def _ask(self) -> int:
        """Send a sync request; its answer proves the server has what was sent before it,
        so it confirms every ticket sent on this connection that waits for no request yet."""
        from pycrdt import create_sync_message  # heavy: pycrdt (the live extra)

        self._send(create_sync_message(self.doc))
        self._asked += 1
        for ticket in self._tickets:
            if ticket.needs is None and ticket.generation == self._generation:
                ticket.needs = self._asked
        return self._asked

    def _send_update_and_ask(self, update: bytes, tickets: list[Ticket]) -> None:
        from pycrdt import create_update_message  # heavy: pycrdt (the live extra)

        if update:
            self._send(create_update_message(update))
        number = self._ask()
        for ticket in tickets:
            ticket.generation, ticket.needs = self._generation, number

    def _drop_connection(self) -> None:
        with self.cond:  # (re-entrant: most callers hold it already)
            ws, self._ws = self._ws, None
            self.connected = False
            if ws is not None:
                self._hang_up(ws)

    def _hang_up(self, ws: Any) -> None:
        """Send ``ws`` its close frame (after everything sent before it), give the server up
        to a second to answer it (the answer says it read all of that; the sync thread reads
        it), then shut the socket, which wakes the sync thread if the link is silent.

        Not ``ws.close()``: it reads the answer itself, under the lock the sync thread holds
        while it waits for a message, so on a link gone silent (a laptop asleep: the
        connection open, nothing coming back) the caller waited for ever, and with it the
        approval that found the room unreachable."""
        with contextlib.suppress(Exception):
            if ws.sock is not None:
                ws.sock.settimeout(1.0)  # a dead link's full send buffer must not hold us
            ws.send_close()
        if threading.current_thread() is not self._thread:
            self.cond.wait_for(lambda: self._reading is not ws, 1.0)
        with contextlib.suppress(Exception):
            ws.abort()
        with contextlib.suppress(Exception):
            ws.shutdown()

    def _run(self) -> None:
        delay = 0.2
        while not self._closed:
            try:
                self._serve_once()
                delay = 0.2
            except Exception as exc:
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.debug("planbook live connection: %s", self.last_error)
            with self.cond:
                self._drop_connection()
                self.cond.notify_all()
                if self._closed:
                    return
                self.cond.wait(delay)
            delay = min(delay * 2, 2.0)

    def _serve_once(self) -> None:
        import websocket  # heavy: websocket-client (the live extra)

        if self._generation:  # a reconnect: has the server restarted?
            file_id, session_id = self.address.open_session()
            if session_id != self._session_id:
                self._reset_next = True  # its room may be rebuilt: never merge, reload
                self._reset_why = "the Jupyter server restarted and rebuilt the room from the file"
            self._file_id, self._session_id = file_id, session_id
        ws = websocket.create_connection(
            self.address.room_url(self._file_id, self._session_id),
            header=self.address.header_lines(),
            enable_multithread=True,
            timeout=self.connect_timeout,
        )
        ws.settimeout(None)
        with self.cond:
            if self._closed:
                ws.close()
                return
            if self._reset_next:
                self._new_doc()
                self.loading = True
                self._reloaded(
                    self._reset_why
                    or "the connection was lost and the notebook was reloaded from the server"
                )
                self._reset_why = ""
                self.changed()
            self._ws = self._reading = ws
            self._generation += 1
            self._asked = self._answered = 0
            self._ask()
        try:
            self._read(ws)
        finally:
            with self.cond:
                self._reading = None
                self.cond.notify_all()

    def _read(self, ws: Any) -> None:
        synced = False
        while not self._closed:
            opcode, data = ws.recv_data()
            quick_ack(ws)
            if opcode == _CLOSE_OPCODE and ws is self._ws:  # (not the answer to our own)
                self._on_close(bytes(data))
            if opcode != _BINARY_OPCODE or not data:
                continue
            with self.cond:
                synced = self._on_message(bytes(data), synced)

    def _on_close(self, data: bytes) -> None:
        code = int.from_bytes(data[:2], "big") if len(data) >= 2 else 0
        reason = data[2:].decode(errors="replace")
        self.last_error = f"room closed ({code} {reason[:200]})".strip()
        if code == 1003 and "reloadable" in reason:
            self._reset_next = True  # the server says our copy cannot be merged: reload
        elif code in (4400, 4404, 4500, 1003):  # no such file, unreadable, failed to load
            with self.cond:
                self._refused = True
                self.cond.notify_all()
        raise ConnectionError(self.last_error)

    def _on_message(self, data: bytes, synced: bool) -> bool:
        with collector_paused():  # it reads and changes the document (documents/collector.py)
            return self._handle_message(data, synced)

    def _handle_message(self, data: bytes, synced: bool) -> bool:
        from pycrdt import Decoder, handle_sync_message, read_message  # heavy: pycrdt

        if data[0] == _SYNC and len(data) > 1:
            kind = data[1]
            if kind == _STEP1:
                reply = handle_sync_message(data[1:], self.doc)
                if reply is not None:
                    self._send(reply)
                if self._tickets and not self._reset_next:  # what they lacked is on its way
                    self._send_update_and_ask(b"", self._tickets)
            elif kind in (_STEP2, _UPDATE):
                update = read_message(data[2:])
                if update != b"\x00\x00":
                    for recorder in self.recorders:
                        recorder.append((kind == _UPDATE, update))
                    self._touched = False
                    with self.doc.transaction(origin="remote"):
                        self.doc.apply_update(update)
                    if self._touched:  # the room echoes our own updates: those change nothing
                        self.changed()
                if kind == _STEP2:
                    self._answered += 1
                    if not synced:
                        synced = True
                        self._on_synced()
                    self._confirm()
        elif data[0] == _RAW:
            with contextlib.suppress(Exception):
                reply = json.loads(Decoder(data[1:]).read_var_string())
                if reply.get("type") == "save" and reply.get("responseTo") in self._saves:
                    self._saves[reply["responseTo"]] = str(reply.get("status", "unknown"))
                    self.cond.notify_all()
        return synced

    def _on_synced(self) -> None:
        self.loading = False  # the server's document is in the copy
        if self._reset_next:
            self._reset_next = False
            pending = [t for t in self._tickets if not t.done]
            if pending:  # a reloaded copy: re-apply what the server never confirmed
                update = self.replay([t.payload for t in pending])
                self._send_update_and_ask(update, pending)
        self.connected = True
        self.cond.notify_all()

    def _confirm(self) -> None:
        for ticket in self._tickets:
            if (
                ticket.needs is not None
                and ticket.generation == self._generation
                and self._answered >= ticket.needs
            ):
                ticket.done = True
        self._tickets = [t for t in self._tickets if not t.done]
        self.cond.notify_all()
