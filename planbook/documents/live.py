"""The notebook as the shared document of a JupyterLab collaboration room (jupyter-collaboration).

A background thread keeps a local pycrdt copy of the room's document in sync over its websocket
(the Yjs sync protocol), so ``cells()`` reads local memory and sees other clients' edits as soon
as they arrive. A ``transaction()`` is buffered: its operations change an overlay that
``cells()`` shows inside the transaction, and at the end they are checked against the current
shared document and applied in ONE pycrdt transaction, so the room gets one update: every open
page shows the whole change or none of it. The update is confirmed by a sync request sent right
after it (the server answers requests in order, so the answer proves it has the update); the
server then saves the file (jupyter-collaboration's save delay, about a second).

Number caveat: the shared document stores JSON numbers as floats; integral floats are read back
as ints (as the server does when it saves the file).
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from planbook.documents.base import Cell, index_of
from planbook.errors import ConflictError, PlanbookError, UnknownCell

if TYPE_CHECKING:
    from pycrdt import Array, Doc, Map

log = logging.getLogger("planbook.live")

_SYNC, _AWARENESS, _RAW = 0, 1, 2
_STEP1, _STEP2, _UPDATE = 0, 1, 2
_CLOSE_OPCODE, _BINARY_OPCODE = 8, 2


class LiveConnectionError(PlanbookError):
    """The collaboration room cannot be reached (or stopped answering); see the message for
    whether the change was applied."""


@dataclass(frozen=True)
class RoomAddress:
    """Where a notebook's collaboration room lives."""

    server_url: str
    """Base URL of the Jupyter server, ending with a slash (http://127.0.0.1:8888/)."""
    token: str
    """The server's token ("" when the server needs none)."""
    path: str
    """The notebook's path relative to the server's root_dir, with forward slashes."""

    def http(self, method: str, api_path: str, body: Any = None, timeout: float = 10.0) -> Any:
        url = urllib.parse.urljoin(self.server_url, api_path)
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method)
        if self.token:
            request.add_header("Authorization", f"token {self.token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
        return json.loads(raw) if raw else None

    def open_session(self) -> tuple[str, str]:
        """PUT /api/collaboration/session/<path>: (fileId, sessionId) of the room."""
        quoted = urllib.parse.quote(self.path)
        reply = self.http(
            "PUT", f"api/collaboration/session/{quoted}", {"format": "json", "type": "notebook"}
        )
        return str(reply["fileId"]), str(reply["sessionId"])

    def room_url(self, file_id: str, session_id: str) -> str:
        base = self.server_url.replace("http", "ws", 1)
        query = urllib.parse.urlencode({"sessionId": session_id, "token": self.token})
        return f"{base}api/collaboration/room/json:notebook:{file_id}?{query}"


# -- operations buffered by a transaction ---------------------------------------------------


@dataclass
class _Op:
    kind: str  # "meta" | "insert" | "replace" | "delete" | "move"
    cell: Cell | None = None
    cell_id: str | None = None
    after: str | None = None  # anchor for insert/move: the id of the cell before, None = top
    key: str | None = None
    value: Any = None


@dataclass
class _Ticket:
    """A committed update waiting for the server's confirmation."""

    ops: list[_Op]
    generation: int
    needs: int | None = None  # answer count that confirms it, in ``generation``
    done: bool = False


@dataclass
class _Txn:
    cells: list[Cell]
    base: dict[str, Cell]
    meta: dict[str, Any] = field(default_factory=dict)
    ops: list[_Op] = field(default_factory=list)
    depth: int = 0


def _ints(value: Any) -> Any:
    """Integral floats back to ints (the shared document stores every number as a float)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_ints(v) for v in value]
    return value


def _to_cell(raw: dict[str, Any]) -> Cell:
    raw = _ints(raw)
    cell_type = raw.get("cell_type", "code")
    source = raw.get("source", "")
    return Cell(
        id=str(raw.get("id", "")),
        cell_type=cell_type,
        source="".join(source) if isinstance(source, list) else str(source),
        metadata=dict(raw.get("metadata") or {}),
        outputs=list(raw.get("outputs") or []) if cell_type == "code" else [],
        execution_count=raw.get("execution_count") if cell_type == "code" else None,
        attachments=raw.get("attachments") or None,
    )


def _quick_ack(ws: Any) -> None:
    """Acknowledge TCP segments at once. The server (tornado) leaves Nagle on, so its answer
    to our sync request waits behind the echo of our own update until that is acknowledged:
    with delayed ACKs that costs 40 ms per commit (Linux only; elsewhere a no-op)."""
    option = getattr(socket, "TCP_QUICKACK", None)
    sock = getattr(ws, "sock", None)
    if option is not None and sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, option, 1)


def _normal(cell: Cell) -> Cell:
    """The cell as it reads back from the shared document (JSON numbers, no outputs on
    markdown), so the local view after a commit equals a fresh read."""
    return _to_cell(_cell_dict(cell))


def _cell_dict(cell: Cell) -> dict[str, Any]:
    """The nbformat dict jupyter_ydoc turns into a shared cell (same keys as the frontend)."""
    out: dict[str, Any] = {
        "id": cell.id,
        "cell_type": cell.cell_type,
        "source": cell.source,
        "metadata": json.loads(json.dumps(cell.metadata)),
    }
    if cell.cell_type == "code":
        out["outputs"] = json.loads(json.dumps(cell.outputs))
        out["execution_count"] = cell.execution_count
    elif cell.attachments:
        out["attachments"] = json.loads(json.dumps(cell.attachments))
    return out


def _youtputs(outputs: list[dict[str, Any]]) -> list[Map[Any]]:
    """Outputs as the frontend stores them: a map each, a stream's text as shared text."""
    from pycrdt import Map, Text

    result = []
    for output in json.loads(json.dumps(outputs)):
        if output.get("output_type") == "stream":
            text = output.get("text", "")
            output["text"] = Text("".join(text) if isinstance(text, list) else text)
        result.append(Map(output))
    return result


class LiveNotebook:
    """``NotebookDocument`` over a collaboration room; close it with ``close()``."""

    backend = "live"

    def __init__(
        self,
        address: RoomAddress,
        *,
        description: str | None = None,
        connect_timeout: float = 15.0,
        confirm_timeout: float = 15.0,
    ) -> None:
        self.address = address
        self.description = description or (
            f"live: {address.path} in the collaboration room of {address.server_url} "
            "(changes appear in the open page; the server saves the file)"
        )
        self.connect_timeout = connect_timeout
        self.confirm_timeout = confirm_timeout
        self._cond = threading.Condition(threading.RLock())
        self._writer = threading.RLock()  # one transaction at a time
        self._local = threading.local()
        self._doc: Doc[Any]
        self._ycells: Array[Any]
        self._ymeta: Map[Any]
        self._new_doc()
        self._version = 0
        self._cache: tuple[int, list[Cell]] | None = None
        self._listeners: list[Callable[[], None]] = []
        self._ws: Any = None
        self._file_id: str | None = None
        self._session_id: str | None = None
        self._generation = 0
        self._connected = False
        self._reset_next = False  # next connection starts from a fresh document
        self._asked = 0  # sync requests sent on this connection
        self._answered = 0  # answers received on this connection
        self._tickets: list[_Ticket] = []
        self._saves: dict[int, str | None] = {}
        self._last_error = ""
        self._closed = False
        self._refused = False  # the room refused us for a reason retrying does not fix
        try:  # fail at once on what retrying cannot fix (no such notebook, wrong token)
            self._file_id, self._session_id = address.open_session()
        except urllib.error.HTTPError as exc:
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
        if not self._wait(lambda: self._connected or self._refused, connect_timeout) or (
            not self._connected
        ):
            error = self._last_error
            self.close()
            raise LiveConnectionError(
                f"could not open the collaboration room of {address.path!r} on "
                f"{address.server_url} ({error or 'timed out'}); check that the server runs "
                "with jupyter-collaboration and has this notebook, or use the file backend"
            )

    # -- reading -----------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return self._connected

    @property
    def version(self) -> int:
        """Grows with every change of the local copy (own commits and other clients')."""
        return self._version

    def cells(self) -> list[Cell]:
        txn = self._txn()
        if txn is not None:
            return [c.model_copy(deep=True) for c in txn.cells]
        return [c.model_copy(deep=True) for c in self._shared_cells()]

    def get_metadata(self, key: str) -> Any | None:
        txn = self._txn()
        if txn is not None and key in txn.meta:
            return json.loads(json.dumps(txn.meta[key]))
        with self._cond:
            meta = self._ymeta.get("metadata")
            value = None if meta is None else meta.get(key)
            if value is None:
                return None
            return _ints(value.to_py() if hasattr(value, "to_py") else value)

    def _shared_cells(self) -> list[Cell]:
        with self._cond:
            if self._cache is None or self._cache[0] != self._version:
                self._cache = (self._version, [_to_cell(c) for c in self._ycells.to_py() or []])
            return self._cache[1]

    def sync(self, timeout: float = 5.0) -> bool:
        """Fetch everything the server has now (one round trip, after waiting up to
        ``timeout`` for a connection); False when that fails. Every commit starts with it, so
        its conflict check sees what others did up to then."""
        with self._cond:
            if not self._wait(lambda: self._connected, timeout if self._thread_ok() else 0):
                return False
            try:
                number = self._ask()
            except Exception:
                return False
            generation = self._generation
        return (
            self._wait(lambda: self._generation != generation or self._answered >= number, timeout)
            and self._generation == generation
        )

    def _thread_ok(self) -> bool:
        return not self._closed and threading.current_thread() is not self._thread

    def subscribe(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback()`` (from the sync thread) after each change of the document."""
        self._listeners.append(callback)
        return lambda: self._listeners.remove(callback) if callback in self._listeners else None

    def wait_for(self, predicate: Callable[[list[Cell]], bool], timeout: float = 10.0) -> bool:
        """Wait until ``predicate(cells())`` holds (True) or ``timeout`` passes (False)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate(self.cells()):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.5))
            return True

    # -- writing -----------------------------------------------------------------------------

    def _txn(self) -> _Txn | None:
        txn: _Txn | None = getattr(self._local, "txn", None)
        return txn

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        txn = self._txn()
        if txn is not None:  # nested: part of the outer transaction
            txn.depth += 1
            try:
                yield
            finally:
                txn.depth -= 1
            return
        with self._writer:
            # the cached cells are never mutated (ops replace them), so sharing them is safe
            cells = list(self._shared_cells())
            txn = _Txn(cells=cells, base={c.id: c for c in cells})
            self._local.txn = txn
            try:
                yield
            finally:
                self._local.txn = None
            if txn.ops:
                self._commit(txn)

    def set_metadata(self, key: str, value: Any) -> None:
        with self.transaction():
            txn = self._require_txn()
            value = json.loads(json.dumps(value))  # JSON only, and a private copy
            txn.meta[key] = value
            txn.ops.append(_Op("meta", key=key, value=value))

    def insert_cell(self, index: int, cell: Cell) -> None:
        with self.transaction():
            txn = self._require_txn()
            if index_of(txn.cells, cell.id) is not None:
                raise ValueError(f"a cell with id {cell.id!r} already exists")
            index = max(0, min(index, len(txn.cells)))
            after = txn.cells[index - 1].id if index > 0 else None
            txn.cells.insert(index, cell.model_copy(deep=True))
            txn.ops.append(_Op("insert", cell=cell.model_copy(deep=True), after=after))

    def replace_cell(self, cell: Cell) -> None:
        with self.transaction():
            txn = self._require_txn()
            i = self._index(txn, cell.id)
            txn.cells[i] = cell.model_copy(deep=True)
            txn.ops.append(_Op("replace", cell=cell.model_copy(deep=True), cell_id=cell.id))

    def delete_cell(self, cell_id: str) -> None:
        with self.transaction():
            txn = self._require_txn()
            del txn.cells[self._index(txn, cell_id)]
            txn.ops.append(_Op("delete", cell_id=cell_id))

    def move_cell(self, cell_id: str, index: int) -> None:
        with self.transaction():
            txn = self._require_txn()
            cell = txn.cells.pop(self._index(txn, cell_id))
            index = max(0, min(index, len(txn.cells)))
            after = txn.cells[index - 1].id if index > 0 else None
            txn.cells.insert(index, cell)
            txn.ops.append(_Op("move", cell_id=cell_id, after=after))

    def _require_txn(self) -> _Txn:
        txn = self._txn()
        assert txn is not None
        return txn

    @staticmethod
    def _index(txn: _Txn, cell_id: str) -> int:
        i = index_of(txn.cells, cell_id)
        if i is None:
            raise UnknownCell(cell_id)
        return i

    # -- commit --------------------------------------------------------------------------------

    def _commit(self, txn: _Txn) -> None:
        path = self.address.path
        # Fetch what the server has first: an edit someone made before this commit is then
        # seen by the check below (a conflict), not merged over.
        if not self.sync(self.confirm_timeout):
            raise LiveConnectionError(
                f"the collaboration room of {path!r} is unreachable ({self._last_error}); "
                "nothing was applied: restart the Jupyter server or retry when it is back"
            )
        with self._cond:
            current = {c.id: c for c in self._shared_cells()}
            after = self._check(txn, current)
            ticket = _Ticket(ops=txn.ops, generation=self._generation)
            self._apply(txn.ops, strict=True)
            self._cache = (self._version, after)  # what the update made: no need to re-read
            self._tickets.append(ticket)
            try:
                self._send_update_and_ask(self._last_update, [ticket])
            except Exception as exc:  # the socket broke: the reconnect sends it again
                log.debug("send failed, waiting for the reconnect: %r", exc)
        if not self._wait(lambda: ticket.done, self.confirm_timeout):
            with self._cond:
                if not ticket.done:
                    # Unknown whether the server has it: forget the local copy on reconnect
                    # rather than push a change the caller was told failed.
                    self._tickets.remove(ticket)
                    self._reset_next = True
                    self._drop_connection()
                    raise LiveConnectionError(
                        f"lost the collaboration room of {path!r} while applying a change "
                        f"({self._last_error or 'no answer'}); the server may not have it: "
                        "look at the notebook, then retry"
                    )

    def _check(self, txn: _Txn, current: dict[str, Cell]) -> list[Cell]:
        """Refuse the whole transaction if a cell it changes was changed by someone else since
        the transaction began, or vanished (nothing is applied); else the cells after it."""
        for op in txn.ops:
            target = op.cell_id if op.kind in ("replace", "delete", "move") else None
            if target is None or target not in txn.base:
                continue
            now = current.get(target)
            if now is None:
                raise ConflictError(
                    f"cell {target!r} was deleted by someone else while this change was "
                    "being applied; nothing was applied: review the notebook and re-plan"
                )
            if now != txn.base[target]:
                raise ConflictError(
                    f"cell {target!r} was edited by someone else while this change was being "
                    "applied; nothing was applied: review the cell and re-plan"
                )
        # Dry run, so that applying cannot fail half way; its result is the new local view.
        cells = list(current.values())
        ids = list(current)
        for op in txn.ops:
            if op.kind in ("insert", "move") and op.after is not None and op.after not in ids:
                raise ConflictError(
                    f"cell {op.after!r} (where a cell goes) was deleted by someone else; "
                    "nothing was applied: review the notebook and re-plan"
                )
            if op.kind == "insert":
                assert op.cell is not None
                if op.cell.id in ids:
                    raise ConflictError(
                        f"someone else added a cell with id {op.cell.id!r} meanwhile; "
                        "nothing was applied: re-plan"
                    )
                at = ids.index(op.after) + 1 if op.after is not None else 0
                ids.insert(at, op.cell.id)
                cells.insert(at, _normal(op.cell))
            elif op.kind in ("replace", "delete", "move"):
                assert op.cell_id is not None
                if op.cell_id not in ids:
                    raise ConflictError(
                        f"cell {op.cell_id!r} is gone from the shared notebook; "
                        "nothing was applied: re-plan"
                    )
                i = ids.index(op.cell_id)
                if op.kind == "replace":
                    assert op.cell is not None
                    cells[i] = _normal(op.cell)
                    continue
                ids.pop(i)
                moved = cells.pop(i)
                if op.kind == "move":
                    at = ids.index(op.after) + 1 if op.after is not None else 0
                    ids.insert(at, op.cell_id)
                    cells.insert(at, moved)
        return cells

    def _apply(self, ops: list[_Op], *, strict: bool) -> None:
        """Apply ``ops`` to the shared document in one pycrdt transaction (one update).
        ``strict=False`` replays confirmed-unknown ops on a reloaded document: idempotent."""
        from jupyter_ydoc import YNotebook
        from pycrdt import Map

        ynb = YNotebook(self._doc)
        before = self._doc.get_state()
        changed = False  # the cell list changed since ``ids`` was read
        with self._doc.transaction(origin="planbook"):
            ids = [str(c.get("id")) for c in self._ycells]
            for op in ops:
                if op.kind in ("insert", "delete", "move", "replace"):
                    ids = [str(c.get("id")) for c in self._ycells] if changed else ids
                    changed = op.kind != "replace"
                if op.kind == "meta":
                    assert op.key is not None
                    meta = self._ymeta.get("metadata")
                    if meta is None:
                        meta = self._ymeta["metadata"] = Map()
                    if op.key in meta:  # replacing a key in place is not seen by every reader
                        del meta[op.key]
                    meta[op.key] = op.value
                elif op.kind == "insert":
                    assert op.cell is not None
                    if op.cell.id in ids:
                        if strict:
                            raise ValueError(f"a cell with id {op.cell.id!r} already exists")
                        continue
                    at = ids.index(op.after) + 1 if op.after in ids else 0
                    if op.after is not None and op.after not in ids:
                        at = len(ids)
                    self._ycells.insert(at, ynb.create_ycell(_cell_dict(op.cell)))
                elif op.kind == "delete":
                    if op.cell_id in ids:
                        del self._ycells[ids.index(op.cell_id)]
                elif op.kind == "move":
                    if op.cell_id not in ids:
                        continue
                    i = ids.index(op.cell_id)
                    moved = _to_cell(self._ycells[i].to_py())
                    del self._ycells[i]
                    ids.pop(i)
                    at = ids.index(op.after) + 1 if op.after in ids else 0
                    # a fresh copy: Yjs arrays have no move the frontend understands
                    self._ycells.insert(at, ynb.create_ycell(_cell_dict(moved)))
                elif op.kind == "replace":
                    assert op.cell is not None
                    if op.cell.id in ids:
                        self._replace(ynb, ids.index(op.cell.id), op.cell)
                    elif not strict:
                        self._ycells.append(ynb.create_ycell(_cell_dict(op.cell)))
        self._last_update = self._doc.get_update(before)
        self._changed()

    def _replace(self, ynb: Any, i: int, cell: Cell) -> None:
        """Change only what differs, so open editors keep cursors and unrelated fields."""
        ycell = self._ycells[i]
        old = _to_cell(ycell.to_py())
        if old.cell_type != cell.cell_type:
            self._ycells[i] = ynb.create_ycell(_cell_dict(cell))
            return
        if old.source != cell.source:
            ynb.set_cell(i, source=cell.source)
        if old.metadata != cell.metadata:
            from pycrdt import Map

            ycell["metadata"] = Map(json.loads(json.dumps(cell.metadata)))
        if cell.cell_type == "code":
            if old.outputs != cell.outputs:
                youtputs = ycell.get("outputs")
                from pycrdt import Array

                if not isinstance(youtputs, Array):
                    youtputs = ycell["outputs"] = Array()
                youtputs.clear()
                youtputs.extend(_youtputs(cell.outputs))
            if old.execution_count != cell.execution_count:
                ycell["execution_count"] = cell.execution_count
        elif old.attachments != cell.attachments:
            if cell.attachments:
                ycell["attachments"] = json.loads(json.dumps(cell.attachments))
            elif "attachments" in ycell:
                del ycell["attachments"]

    # -- saving --------------------------------------------------------------------------------

    def save(self, timeout: float = 10.0) -> str:
        """Ask the server to save the room to disk now; returns its status ("success",
        "skipped" when a save was already running, or "failed")."""
        from pycrdt import Encoder

        with self._cond:
            save_id = len(self._saves) + 1
            self._saves[save_id] = None
            encoder = Encoder()
            encoder.write_var_uint(_RAW)
            encoder.write_var_string("save")
            encoder.write_var_uint(save_id)
            self._send(encoder.to_bytes())
        if not self._wait(lambda: self._saves.get(save_id) is not None, timeout):
            raise LiveConnectionError(
                f"the server did not confirm saving {self.address.path!r}; it saves on its "
                "own about a second after each change"
            )
        return str(self._saves[save_id])

    # -- the sync thread -----------------------------------------------------------------------

    def _new_doc(self) -> None:
        from pycrdt import Array, Doc, Map

        self._doc = Doc(allow_multithreading=True)
        self._touched = False
        # called only for transactions that changed something (never read the doc in it)
        self._doc.observe(lambda _event: setattr(self, "_touched", True))
        self._ycells = self._doc.get("cells", type=Array)
        self._ymeta = self._doc.get("meta", type=Map)
        self._last_update = b""

    def _changed(self) -> None:
        self._version += 1
        self._cond.notify_all()
        for listener in list(self._listeners):
            try:
                listener()
            except Exception:  # a listener must not stop the sync
                log.exception("planbook live listener failed")

    def _wait(self, predicate: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0 or (self._closed and not predicate()):
                    return predicate()
                self._cond.wait(min(left, 0.5))
            return True

    def _send(self, message: bytes) -> None:
        ws = self._ws
        if ws is None:
            raise ConnectionError("not connected")
        ws.send_binary(message)

    def _ask(self) -> int:
        """Send a sync request; its answer proves the server has what was sent before it."""
        from pycrdt import create_sync_message

        self._send(create_sync_message(self._doc))
        self._asked += 1
        return self._asked

    def _send_update_and_ask(self, update: bytes, tickets: list[_Ticket]) -> None:
        from pycrdt import create_update_message

        if update:
            self._send(create_update_message(update))
        number = self._ask()
        for ticket in tickets:
            ticket.generation, ticket.needs = self._generation, number

    def _drop_connection(self) -> None:
        ws, self._ws = self._ws, None
        self._connected = False
        if ws is not None:
            with contextlib.suppress(Exception):
                ws.close(timeout=1)

    def _run(self) -> None:
        delay = 0.2
        while not self._closed:
            try:
                self._serve_once()
                delay = 0.2
            except Exception as exc:
                self._last_error = f"{type(exc).__name__}: {exc}"
                log.debug("planbook live connection: %s", self._last_error)
            with self._cond:
                self._drop_connection()
                self._cond.notify_all()
                if self._closed:
                    return
                self._cond.wait(delay)
            delay = min(delay * 2, 2.0)

    def _serve_once(self) -> None:
        import websocket  # websocket-client

        file_id, session_id = (
            self.address.open_session()
            if self._generation
            else (
                self._file_id,
                self._session_id,
            )
        )
        assert file_id is not None and session_id is not None
        if self._session_id is not None and session_id != self._session_id:
            # The server restarted. Its room may have been rebuilt from the file with new
            # CRDT items; merging our old copy into it would duplicate text. Start afresh.
            self._reset_next = True
        self._file_id, self._session_id = file_id, session_id
        ws = websocket.create_connection(
            self.address.room_url(self._file_id, self._session_id),
            enable_multithread=True,
            timeout=self.connect_timeout,
        )
        ws.settimeout(None)
        with self._cond:
            if self._closed:
                ws.close()
                return
            if self._reset_next:
                self._new_doc()
                self._changed()
            self._ws = ws
            self._generation += 1
            self._asked = self._answered = 0
            self._ask()
        synced = False
        while not self._closed:
            opcode, data = ws.recv_data()
            _quick_ack(ws)
            if opcode == _CLOSE_OPCODE:
                self._on_close(bytes(data))
                return
            if opcode != _BINARY_OPCODE or not data:
                continue
            with self._cond:
                synced = self._on_message(bytes(data), synced)

    def _on_close(self, data: bytes) -> None:
        code = int.from_bytes(data[:2], "big") if len(data) >= 2 else 0
        reason = data[2:].decode(errors="replace")
        self._last_error = f"room closed ({code} {reason[:200]})".strip()
        if code == 1003 and "reloadable" in reason:
            # the server restarted with a document our copy cannot merge with: reload it
            self._reset_next = True
        elif code in (4400, 4404, 4500, 1003):  # no such file, unreadable, failed to load
            with self._cond:
                self._refused = True
                self._cond.notify_all()
        raise ConnectionError(self._last_error)

    def _on_message(self, data: bytes, synced: bool) -> bool:
        from pycrdt import Decoder, handle_sync_message, read_message

        if data[0] == _SYNC and len(data) > 1:
            kind, payload = data[1], data[2:]
            if kind == _STEP1:
                reply = handle_sync_message(data[1:], self._doc)
                if reply is not None:
                    self._send(reply)
                if self._tickets and not self._reset_next:  # what they lacked is on its way
                    self._send_update_and_ask(b"", self._tickets)
            elif kind in (_STEP2, _UPDATE):
                update = read_message(payload)
                if update != b"\x00\x00":
                    self._touched = False
                    with self._doc.transaction(origin="remote"):
                        self._doc.apply_update(update)
                    # the room echoes our own updates back: only a real change counts
                    if self._touched:
                        self._changed()
                if kind == _STEP2:
                    self._answered += 1
                    if not synced:
                        synced = True
                        self._on_synced()
                    self._confirm()
        elif data[0] == _RAW:
            with contextlib.suppress(Exception):
                decoder = Decoder(data[1:])
                reply = json.loads(decoder.read_var_string())
                if reply.get("type") == "save" and reply.get("responseTo") in self._saves:
                    self._saves[reply["responseTo"]] = str(reply.get("status", "unknown"))
                    self._cond.notify_all()
        return synced

    def _on_synced(self) -> None:
        if self._reset_next:
            self._reset_next = False
            # a reloaded document: replay what was sent but never confirmed (idempotently)
            pending = [t for t in self._tickets if not t.done]
            if pending:
                self._apply([op for t in pending for op in t.ops], strict=False)
                self._send_update_and_ask(self._last_update, pending)
        self._connected = True
        self._cond.notify_all()

    def _confirm(self) -> None:
        for ticket in self._tickets:
            if (
                ticket.needs is not None
                and ticket.generation == self._generation
                and self._answered >= ticket.needs
            ):
                ticket.done = True
        self._tickets = [t for t in self._tickets if not t.done]
        self._cond.notify_all()

    def close(self) -> None:
        """Leave the room and stop the sync thread (the shared document stays on the server)."""
        with self._cond:
            self._closed = True
            self._drop_connection()
            self._cond.notify_all()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(5)

    def __enter__(self) -> LiveNotebook:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<LiveNotebook {self.address.path!r} on {self.address.server_url}>"


def open_live(
    server_url: str, token: str, path: str, *, description: str | None = None
) -> LiveNotebook:
    """Connect to the room of ``path`` (relative to the server's root) and sync it."""
    url = server_url if server_url.endswith("/") else server_url + "/"
    return LiveNotebook(RoomAddress(url, token, path), description=description)
