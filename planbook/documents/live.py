"""The notebook as the shared document of a JupyterLab collaboration room (jupyter-collaboration).

A background thread keeps a local pycrdt copy of the room's document in sync over its websocket
(the Yjs sync protocol), so ``cells()`` reads local memory and sees other clients' edits as soon
as they arrive. A ``transaction()`` is buffered: its operations change an overlay that
``cells()`` shows inside the transaction, and at the end they are checked against the current
shared document and applied in ONE pycrdt transaction, so the room gets one update: every open
page shows the whole change or none of it. The update is confirmed by a sync request sent right
after it (the server answers requests in order, so the answer proves it has the update). A
commit waits for that answer only when it rewrote a cell's text; otherwise the next commit's
own sync, a save (``make_durable``) or ``close()`` waits for it, so a run of steps costs one
round trip per step. The server saves the file on request, and on its own about a second
after the last change (jupyter-collaboration's save delay).

Metadata is written by difference: an entry written again becomes shared maps and arrays, one
level at a time, and only the parts that changed travel (a step's status, not its plan). What
the metadata holds is cached as JSON until someone else changes it.

Number caveat: the shared document stores JSON numbers as floats; integral floats are read back
as ints (as the server does when it saves the file).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from planbook.documents.base import (
    DELETE,
    Cell,
    CellPlace,
    MetadataPath,
    apply_metadata_changes,
)
from planbook.documents.live_room import LiveConnectionError, Room, RoomAddress, Ticket
from planbook.errors import ConflictError, UnknownCell

if TYPE_CHECKING:
    from pycrdt import Array, Doc, Map

__all__ = ["LateMerge", "LiveConnectionError", "LiveNotebook", "RoomAddress", "open_live"]


# -- operations buffered by a transaction ---------------------------------------------------


@dataclass
class _Op:
    kind: str  # "meta" | "meta_part" | "insert" | "replace" | "delete" | "move"
    cell: Cell | None = None
    cell_id: str | None = None
    after: str | None = None  # anchor for insert/move: the id of the cell before, None = top
    key: str | None = None
    value: Any = None  # "meta": the whole value; "meta_part": {path: value or DELETE}


@dataclass
class _Txn:
    cells: list[Cell]
    base: dict[str, Cell]
    #: The ids of ``cells``, kept in step with it: a lookup by id is a C-speed list scan.
    ids: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    #: update_metadata changes per key since the last whole value (applied when read)
    parts: dict[str, list[Mapping[MetadataPath, Any]]] = field(default_factory=dict)
    ops: list[_Op] = field(default_factory=list)
    depth: int = 0
    #: The sync request sent when the transaction began, and when (see ``_fresh``).
    asked: tuple[int, int] | None = None
    asked_at: float = 0.0
    #: The room's reload count when the transaction began: its changes were made against
    #: that copy of the document (metadata by part: against the record read from it).
    reloads: int = 0


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


def _own_copy(cell: Cell) -> Cell:
    """A copy of ``cell`` with its own metadata dict and outputs list. (The engine reads the
    cells several times per step: ``copy.copy`` is a third of ``model_copy(update=...)``.)"""
    new = copy.copy(cell)
    fields = new.__dict__
    fields["metadata"] = dict(cell.metadata)
    fields["outputs"] = list(cell.outputs)
    return new


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
        #: How long a commit waits for the room (reconnecting included) before it fails.
        self.confirm_timeout = confirm_timeout
        self._writer = threading.RLock()  # one transaction at a time
        self._local = threading.local()
        self._cache: tuple[int, list[Cell]] | None = None
        #: The ids of the cached cells list (that list object, which is never mutated).
        self._ids: tuple[list[Cell], list[str]] | None = None
        #: metadata[key] as JSON, per key, with the room's meta_version it was read at: the
        #: plan is read at every step, and converting the shared maps back is O(plan)
        self._meta_cache: dict[str, tuple[int, Any]] = {}
        self._saved_version = -1  # the room's version at the last confirmed save
        self._saved_at = float("-inf")  # and when (time.monotonic)
        self._unconfirmed: Ticket | None = None  # the last commit's, while not confirmed
        #: Watches of text rewrites found unmerged at commit, kept until ``late_merges``: an
        #: edit made on the text before can still reach the server after that look.
        self._lingering: list[tuple[_SourceWatch, bytes]] = []
        self._room = Room(address, self._replay, connect_timeout=connect_timeout)
        try:
            self._ensure_ids()
        except BaseException:
            self.close()
            raise

    def _ensure_ids(self) -> None:
        """Steps target cells by id, so ids must survive a save: upgrade an nbformat 4.4
        notebook (the server strips ids when saving those) and fill missing or repeated ids,
        as the file backend does."""
        import uuid

        room = self._room
        with room.cond:
            minor = room.meta.get("nbformat_minor")
            old = minor is not None and int(minor) < 5
            seen: set[str] = set()
            fixes = []
            for ycell in room.cells:
                cell_id = ycell.get("id")
                if not cell_id or cell_id in seen:
                    fixes.append(ycell)
                seen.add(str(cell_id))
            if not old and not fixes:
                return
            before = room.doc.get_state()
            with room.doc.transaction(origin="planbook"):
                if old:
                    room.meta["nbformat_minor"] = 5
                for ycell in fixes:
                    ycell["id"] = uuid.uuid4().hex[:8]
            room.changed()
            room.send(room.doc.get_update(before), [], self.confirm_timeout)

    # -- reading -----------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return self._room.connected

    @property
    def version(self) -> int:
        """Grows with every change of the local copy (own commits and other clients')."""
        return self._room.version

    def cells(self) -> list[Cell]:
        txn = self._txn()
        cells = txn.cells if txn is not None else self._shared_cells()
        # the cached cells are shared: callers get their own objects and top-level containers
        # (as the file backend gives them), without the cost of a deep copy of every output
        return [_own_copy(c) for c in cells]

    def find_cell(self, cell_id: str) -> CellPlace | None:
        """The cell with ``cell_id`` and its place, converting nothing but that cell (see
        ``NotebookDocument.find_cell``)."""
        txn = self._txn()
        if txn is not None:
            cells, ids = txn.cells, txn.ids
        else:
            cells = self._shared_cells()
            ids = self._ids_of(cells)
        try:
            i = ids.index(cell_id)
        except ValueError:
            return None
        return CellPlace(i, _own_copy(cells[i]), ids[i - 1] if i > 0 else None)

    def _ids_of(self, cells: list[Cell]) -> list[str]:
        """The ids of ``cells``, a list of the cache (never mutated): computed once per list.
        Read-only for the caller."""
        known = self._ids
        if known is not None and known[0] is cells:
            return known[1]
        ids = [c.id for c in cells]
        self._ids = (cells, ids)
        return ids

    def get_metadata(self, key: str) -> Any | None:
        txn = self._txn()
        if txn is not None and key in txn.meta:
            value = json.loads(json.dumps(txn.meta[key]))
        else:
            value = self._shared_metadata(key)
        if txn is not None and txn.parts.get(key):
            for changes in txn.parts[key]:
                value = apply_metadata_changes(value, changes)
        return value

    def _shared_metadata(self, key: str) -> Any | None:
        """``metadata[key]`` as JSON, whether it is one value (a whole-value write, from an
        older planbook or JupyterLab's metadata editor) or shared maps written by part.

        The value is cached until the metadata changes, and shared: callers treat it as
        read-only (as with the file backend)."""
        room = self._room
        with room.cond:
            hit = self._meta_cache.get(key)
            if hit is not None and hit[0] == room.meta_version:
                return hit[1]
            meta = room.meta.get("metadata")
            value = None if meta is None else meta.get(key)
            if value is not None:
                value = _ints(value.to_py() if hasattr(value, "to_py") else value)
            self._meta_cache[key] = (room.meta_version, value)
            return value

    def _shared_cells(self) -> list[Cell]:
        room = self._room
        with room.cond:
            if self._cache is None or self._cache[0] != room.cells_version:
                self._cache = (room.cells_version, self._converted(self._cache))
            return self._cache[1]

    def _converted(self, cache: tuple[int, list[Cell]] | None) -> list[Cell]:
        """The shared cells as ``Cell``s (holding the room's ``cond``): from ``cache`` with only
        the cells changed in place since converted again (someone typing in one cell, a
        running cell's outputs), else all of them (cells added, removed or moved)."""
        room = self._room
        changed = None if cache is None else room.cells_changed_since(cache[0])
        if cache is not None and changed is not None and len(cache[1]) == len(room.cells):
            cells = list(cache[1])
            for i in changed:
                cells[i] = _to_cell(room.cells[i].to_py() or {})
            return cells
        return [_to_cell(c) for c in room.cells.to_py() or []]

    def sync(self, timeout: float = 5.0) -> bool:
        """Fetch everything the server has now (one round trip, after waiting up to
        ``timeout`` for a connection); False when that fails. Every commit starts with it, so
        its conflict check sees what others did up to then."""
        return self._room.sync(timeout)

    def catch_up(self) -> None:
        """Before a change is prepared: when the connection is down, wait for it (bounded) so
        that a reload it brings (server restarted) happens before the record is read, not
        under the commit; LiveConnectionError (nothing applied) when the room stays away."""
        if not self._room.connected and not self._room.sync(self.confirm_timeout):
            raise self._unreachable()

    def _unreachable(self) -> LiveConnectionError:
        return LiveConnectionError.nothing_applied(
            f"the collaboration room of {self.address.path!r} is unreachable "
            f"({self._room.last_error or 'no answer'}); nothing was applied: restart the "
            "Jupyter server or retry when it is back"
        )

    def save(self, timeout: float = 10.0) -> str:
        """Ask the server to save the file now ("success", "skipped" or "failed"); it also
        saves on its own about a second after each change."""
        return self._room.save(timeout)

    def make_durable(
        self, timeout: float | None = None, *, unless_saved_within: float = 0.0
    ) -> str:
        """Make sure the file on disk holds everything committed so far: ask the server to
        save the room and wait for its answer (bounded; a "skipped" save is asked again).
        "" when saved (or nothing changed since the last save, or a save was confirmed less
        than ``unless_saved_within`` seconds ago), else one line saying why not; the server
        then still saves on its own about a second after the last change."""
        version = self._room.version
        if version == self._saved_version or (
            time.monotonic() - self._saved_at < unless_saved_within
        ):
            return ""
        deadline = time.monotonic() + (self.confirm_timeout if timeout is None else timeout)
        status = "no answer"
        failed = self._confirm_last(deadline)
        if failed:
            return failed
        while True:
            try:
                status = self._room.save(max(0.1, deadline - time.monotonic()))
            except LiveConnectionError as exc:  # unreachable until the deadline
                status = str(exc)
                break
            if status == "success":
                self._saved_version, self._saved_at = version, time.monotonic()
                return ""
            # skipped, not written (cancelled by another change), lost: ask again
            if time.monotonic() + 0.2 >= deadline:
                break
            time.sleep(0.2)
        return (
            f"the server has not saved {self.address.path!r} yet ({status}); the change is in "
            "the room and the server saves it on its own about a second later"
        )

    @property
    def reloads(self) -> int:
        """Grows each time the local copy was replaced by the server's (server restarted, file
        changed on disk): a record kept in memory must then be reconciled with the room."""
        return self._room.reloads

    @property
    def reload_reason(self) -> str:
        return self._room.reload_reason

    def subscribe(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback()`` (from the sync thread) after each change of the document."""
        return self._room.subscribe(callback)

    def wait_for(self, predicate: Callable[[list[Cell]], bool], timeout: float = 10.0) -> bool:
        """Wait until ``predicate(cells())`` holds (True) or ``timeout`` passes (False)."""
        deadline = time.monotonic() + timeout
        with self._room.cond:
            while not predicate(self.cells()):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._room.cond.wait(min(left, 0.5))
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
            shared = self._shared_cells()
            cells, ids = list(shared), list(self._ids_of(shared))
            base = dict(zip(ids, cells, strict=True))
            txn = _Txn(cells=cells, base=base, ids=ids, reloads=self._room.reloads)
            txn.asked, txn.asked_at = self._room.ask(), time.monotonic()
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
            txn.parts.pop(key, None)  # the whole value replaces earlier changes by part
            txn.ops.append(_Op("meta", key=key, value=value))

    def update_metadata(self, key: str, changes: Mapping[MetadataPath, Any]) -> None:
        """Each object on a path becomes a shared map of its own (metadata[key] too), so the
        update carries only the entries named here: a step's cost does not grow with the plan.
        A whole value found on the way (a whole-value write) is turned into maps once.

        The values are kept as given, not copied (as the file backend does): the caller hands
        over fresh JSON it will not change. A copy cost an encode and a decode of the whole
        plan at every save; and parts the caller shares with its previous save are then the
        same objects here, so finding what differs skips them at once."""
        private: dict[MetadataPath, Any] = {}
        for path, value in changes.items():
            if not path or not all(isinstance(part, str) for part in path):
                raise ValueError(f"a metadata path is a non-empty tuple of strings, not {path!r}")
            private[tuple(path)] = value
        if not private:
            return
        with self.transaction():
            txn = self._require_txn()
            txn.parts.setdefault(key, []).append(private)
            txn.ops.append(_Op("meta_part", key=key, value=private))

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """One writer in this process; the room orders writers of other processes."""
        with self._writer:
            yield

    def insert_cell(self, index: int, cell: Cell) -> None:
        with self.transaction():
            txn = self._require_txn()
            if cell.id in txn.ids:
                raise ValueError(f"a cell with id {cell.id!r} already exists")
            index = max(0, min(index, len(txn.cells)))
            after = txn.ids[index - 1] if index > 0 else None
            txn.cells.insert(index, cell.model_copy(deep=True))
            txn.ids.insert(index, cell.id)
            txn.ops.append(_Op("insert", cell=cell.model_copy(deep=True), after=after))

    def replace_cell(self, cell: Cell) -> None:
        with self.transaction():
            txn = self._require_txn()
            txn.cells[self._index(txn, cell.id)] = cell.model_copy(deep=True)
            txn.ops.append(_Op("replace", cell=cell.model_copy(deep=True), cell_id=cell.id))

    def delete_cell(self, cell_id: str) -> None:
        with self.transaction():
            txn = self._require_txn()
            i = self._index(txn, cell_id)
            del txn.cells[i]
            del txn.ids[i]
            txn.ops.append(_Op("delete", cell_id=cell_id))

    def move_cell(self, cell_id: str, index: int) -> None:
        with self.transaction():
            txn = self._require_txn()
            i = self._index(txn, cell_id)
            cell = txn.cells.pop(i)
            del txn.ids[i]
            index = max(0, min(index, len(txn.cells)))
            after = txn.ids[index - 1] if index > 0 else None
            txn.cells.insert(index, cell)
            txn.ids.insert(index, cell_id)
            txn.ops.append(_Op("move", cell_id=cell_id, after=after))

    def _require_txn(self) -> _Txn:
        txn = self._txn()
        assert txn is not None
        return txn

    @staticmethod
    def _index(txn: _Txn, cell_id: str) -> int:
        try:
            return txn.ids.index(cell_id)
        except ValueError:
            raise UnknownCell(cell_id) from None

    # -- commit --------------------------------------------------------------------------------

    def _commit(self, txn: _Txn) -> None:
        # Fetch what the server has first: an edit someone made before this commit is then
        # seen by the check below (a conflict), not merged over.
        if not self._fresh(txn) and not self._room.sync(self.confirm_timeout):
            raise self._unreachable()
        with self._room.cond:  # held until the update is handed over: no reload in between
            if self._room.reloads != txn.reloads:
                # made against a copy the server has replaced since (restart, file changed on
                # disk): its record parts would land on a record they were not computed from
                raise LiveConnectionError.nothing_applied(
                    f"the collaboration room of {self.address.path!r} was reloaded while this "
                    f"change was prepared ({self._room.reload_reason}); nothing was applied: "
                    "retry"
                )
            current = {c.id: c for c in self._shared_cells()}
            after = _check(txn, current)
            self._forget_lingering(txn.ops)
            watch = _SourceWatch(self._room, txn.ops)
            try:
                update = self._apply(txn.ops, strict=True)
                self._cache = (self._room.cells_version, after)  # what the update made
                self._hand_over(update, txn.ops, confirm_now=bool(watch.targets))
            except BaseException:
                watch.stop()
                raise
        if watch.targets:
            self._take_back_if_merged(watch, update)

    #: A sync request sent when a transaction began serves its commit if it is younger than
    #: this (seconds); else the commit asks again.
    FRESH_FOR = 0.25

    def _fresh(self, txn: _Txn) -> bool:
        """Whether the answer to the request sent when ``txn`` began came, on the same
        connection, and the request is recent. Its round trip then overlapped the
        transaction's own work instead of adding to it. The check at commit sees what the
        server had when the transaction began and every update that arrived since (the server
        sends each one at once); asking at commit time narrows that only by the transaction's
        duration, bounded by FRESH_FOR."""
        if txn.asked is None or time.monotonic() - txn.asked_at > self.FRESH_FOR:
            return False
        return self._room.answered(txn.asked, self.confirm_timeout, while_connected=True)

    def _hand_over(self, update: bytes, ops: list[_Op], *, confirm_now: bool) -> None:
        """Send a commit's update. Its confirmation is awaited here only when the commit
        rewrote a cell's text (a merge must be looked for at once); otherwise the next commit's
        sync, a save or ``close()`` confirms it (the server answers in order), so a run of
        steps costs one round trip each instead of two. Until confirmed, the update (the change
        and its record, together) is resent after a reconnect or replayed after a reload."""
        if confirm_now:
            self._room.send(update, ops, self.confirm_timeout)
        else:
            self._unconfirmed = self._room.post(update, ops)

    def _confirm_last(self, deadline: float) -> str:
        """Before a save: wait for the last commit's confirmation as the commit itself used
        to, so whoever asks for durability (the executor, before code runs) decides on the
        same facts: "" when the server has it, else why not (and then the change is not
        pushed again later: the room is reloaded on reconnect, and reconciled)."""
        last = self._unconfirmed
        if last is None or last.done:
            return ""
        try:
            self._room.confirm(last, max(0.1, deadline - time.monotonic()))
        except LiveConnectionError as exc:
            return str(exc)
        return ""

    def _take_back_if_merged(self, watch: _SourceWatch, own: bytes) -> None:
        """An edit someone made while this change travelled merges with it at the server
        (text CRDTs merge, they do not conflict): the cell would hold their text with pieces
        of ours. Look once more; if a target's text is not what this change wrote, put back
        the text as they made it (the document before this change plus their updates) and
        report a conflict."""
        from jupyter_ydoc import YNotebook

        lingers = False
        try:
            self._room.sync(self.confirm_timeout)
            with self._room.cond:
                merged = watch.merged()
                if not merged:
                    lingers = True  # until the next ``late_merges``
                    self._lingering.append((watch, own))
                    for old, _ in self._lingering[: -self.LINGERING_AT_MOST]:
                        old.stop()  # a caller that never asks: keep memory bounded
                    del self._lingering[: -self.LINGERING_AT_MOST]
                    return
                # the order in which the server applied their edit and this one decides what
                # their text is: wait (briefly) for the relay of what the sync brought
                self._room.wait(lambda: watch.all_relayed(own), self.RELAY_WAIT)
                theirs = watch.theirs(own)
                if theirs.after_ours:
                    # their edit was made on this step's text (it came after the step, it did
                    # not race it): the step is done and their later edit stands
                    return
                room = self._room
                before = room.doc.get_state()
                ynb = YNotebook(room.doc)
                with room.doc.transaction(origin="planbook"):
                    ids = [str(c.get("id")) for c in room.cells]
                    for cell_id in merged:
                        if cell_id in theirs.texts and cell_id in ids:
                            ynb.set_cell(ids.index(cell_id), source=theirs.texts[cell_id])
                room.changed()
                self._cache = None
                room.send(room.doc.get_update(before), [], self.confirm_timeout)
        finally:
            if not lingers:
                watch.stop()
        error = ConflictError(_merge_message(merged[0], theirs.unknown.get(merged[0])))
        error.landed = True  # type: ignore[attr-defined]  # the record went with the change
        raise error

    def late_merges(self, *, sync: bool = True) -> list[LateMerge]:
        """Edits made on a target's text before a commit rewrote it that reached the server
        only after the commit looked for a merge (a network's delay): each target's text as
        they made it, for the caller to put back with its record of the change, in one
        transaction. One round trip, only while a text rewrite is watched: a watch ends with
        what it finds, when someone edits the step's text itself (they saw it: nothing can
        race it any more), when this process rewrites the cell again, or LINGER_FOR seconds
        after its commit (the executor asks before each step, before code runs, and at the
        run's end). ``sync=False``: look at what the server sent so far, without asking (it
        sends each edit as it applies it: between two steps, that is as good)."""
        lingering, self._lingering = self._lingering, []
        if not lingering:
            return []
        found: list[LateMerge] = []
        kept: list[tuple[_SourceWatch, bytes]] = []
        try:
            if sync and not self._room.sync(self.confirm_timeout):
                return []  # unreachable: the room's reconcile takes over from here
            with self._room.cond:
                for watch, own in lingering:
                    if watch.reloads != self._room.reloads:
                        continue  # its texts are gone with the old copy
                    merged = watch.merged()
                    if not merged:
                        if time.monotonic() - watch.started < self.LINGER_FOR:
                            kept.append((watch, own))
                        continue
                    self._room.wait(functools.partial(watch.all_relayed, own), self.RELAY_WAIT)
                    theirs = watch.theirs(own)
                    if theirs.after_ours:
                        continue  # made on the step's text: a later edit, it stands
                    found += [
                        LateMerge(cell_id, theirs.texts[cell_id], theirs.unknown.get(cell_id))
                        for cell_id in merged
                        if cell_id in theirs.texts
                    ]
        finally:
            for watch, _ in lingering:
                if all(watch is not k for k, _ in kept):
                    watch.stop()
            self._lingering[:0] = kept
        return found

    def _forget_lingering(self, ops: list[_Op]) -> None:
        """A change of a watched cell's text by this process ends its watch (a merge found
        later could not be told from this change)."""
        rewritten = {op.cell_id for op in ops if op.kind in ("replace", "delete", "move")}
        for entry in list(self._lingering):
            if rewritten & entry[0].targets.keys():
                entry[0].stop()
                self._lingering.remove(entry)

    #: Watches kept for ``late_merges`` at most (the oldest end first), and for how long
    #: after their commit (seconds): a person's edit is on the network for less than that.
    LINGERING_AT_MOST = 8
    LINGER_FOR = 5.0

    #: How long a merge's put-back waits for the server to relay what a sync brought (the
    #: relay tells in which order the server applied the edits), in seconds.
    RELAY_WAIT = 2.0

    def _cell_ids(self) -> list[str]:
        """The ids of the shared cells in order (call holding the room's ``cond``): from the
        cached cells when they are current, since reading each shared cell is O(notebook)."""
        cache = self._cache
        if cache is not None and cache[0] == self._room.cells_version:
            return list(self._ids_of(cache[1]))
        return [str(c.get("id")) for c in self._room.cells]

    def _replay(self, payloads: list[Any]) -> bytes:
        """After a reload: re-apply changes the server never confirmed (idempotently)."""
        return self._apply([op for ops in payloads for op in ops], strict=False)

    def _apply(self, ops: list[_Op], *, strict: bool) -> bytes:
        """Apply ``ops`` to the shared document in one pycrdt transaction; the update.
        ``strict=False`` (a replay) skips what is already there or gone."""
        from jupyter_ydoc import YNotebook
        from pycrdt import Map

        doc, ycells = self._room.doc, self._room.cells
        ynb = YNotebook(doc)
        before = doc.get_state()
        #: metadata[key] as JSON after the ops so far, for each key they change
        views: dict[str, Any] = {}
        with doc.transaction(origin="planbook"):
            ids = self._cell_ids()  # kept in step with ``ycells`` below, never read again
            for op in ops:
                if op.kind == "meta":
                    assert op.key is not None
                    meta = self._room.meta.get("metadata")
                    if meta is None:
                        meta = self._room.meta["metadata"] = Map()
                    if op.key in meta:  # replacing a key in place is not seen by every reader
                        del meta[op.key]
                    meta[op.key] = op.value
                    views[op.key] = op.value
                elif op.kind == "meta_part":
                    assert op.key is not None
                    if op.key not in views:
                        views[op.key] = self._shared_metadata(op.key)
                    views[op.key] = _apply_parts(self._room.meta, op.key, op.value, views[op.key])
                elif op.kind == "insert":
                    assert op.cell is not None
                    if op.cell.id in ids:
                        if strict:
                            raise ValueError(f"a cell with id {op.cell.id!r} already exists")
                        continue
                    at = ids.index(op.after) + 1 if op.after in ids else 0
                    if op.after is not None and op.after not in ids:
                        at = len(ids)
                    ycells.insert(at, ynb.create_ycell(_cell_dict(op.cell)))
                    ids.insert(at, op.cell.id)
                elif op.kind == "delete":
                    if op.cell_id in ids:
                        del ycells[ids.index(op.cell_id)]
                        ids.remove(op.cell_id)
                elif op.kind == "move":
                    if op.cell_id not in ids:
                        continue
                    i = ids.index(op.cell_id)
                    moved = _to_cell(ycells[i].to_py())
                    del ycells[i]
                    ids.pop(i)
                    at = ids.index(op.after) + 1 if op.after in ids else 0
                    # a fresh copy: Yjs arrays have no move the frontend understands
                    ycells.insert(at, ynb.create_ycell(_cell_dict(moved)))
                    ids.insert(at, op.cell_id)
                elif op.kind == "replace":
                    assert op.cell is not None
                    if op.cell.id in ids:
                        _replace(ynb, ids.index(op.cell.id), op.cell)
                    elif not strict:
                        ycells.append(ynb.create_ycell(_cell_dict(op.cell)))
                        ids.append(op.cell.id)
        # what the shared metadata holds now, without reading it back (O(plan))
        for key, value in views.items():
            self._meta_cache[key] = (self._room.meta_version, value)
        self._room.changed()
        update: bytes = doc.get_update(before)
        return update

    def close(self) -> None:
        """Leave the room and stop the sync thread (the shared document stays on the server),
        once the server has the last commit (bounded: ``confirm_timeout``)."""
        last = self._unconfirmed
        if last is not None and not last.done and self._room.connected:
            self._room.wait(lambda: last.done, self.confirm_timeout)
        for watch, _ in self._lingering:
            watch.stop()
        self._lingering.clear()
        self._room.close()

    def __enter__(self) -> LiveNotebook:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<LiveNotebook {self.address.path!r} on {self.address.server_url}>"


@dataclass(frozen=True)
class LateMerge:
    """An edit that raced a committed text rewrite and reached the server after the commit
    looked (see ``LiveNotebook.late_merges``)."""

    cell_id: str
    #: the cell's text as they made it, without the commit's change
    text: str
    #: the text before the commit, when whether they kept it cannot be known (left out)
    unknown: str | None = None

    def message(self) -> str:
        """The conflict's one line."""
        return _merge_message(self.cell_id, self.unknown)


@dataclass
class _Theirs:
    """What the others made of a transaction's targets (see ``_SourceWatch.theirs``)."""

    #: each target's text as the others left it, without this transaction
    texts: dict[str, str]
    #: an edit of theirs was made on this transaction's text: it came after, it did not race
    after_ours: bool
    #: targets whose text before the transaction cannot be known to be kept or deleted by
    #: them (their edit reached the server after this one): that text, left out of ``texts``
    unknown: dict[str, str] = field(default_factory=dict)


class _SourceWatch:
    """The shared text of each cell a transaction rewrites, what the document held before
    it, and every update the room sends meanwhile: enough to rebuild each target's text as
    the others made it, without this transaction."""

    def __init__(self, room: Room, ops: list[_Op]) -> None:
        from pycrdt import Text

        self.wanted: dict[str, str] = {}
        for op in ops:
            if op.kind == "replace" and op.cell is not None:
                self.wanted[op.cell.id] = op.cell.source
            elif op.kind in ("delete", "move") and op.cell_id in self.wanted:
                del self.wanted[op.cell_id]  # no longer a text edit in place
        self.room = room
        self.targets: dict[str, Any] = {}
        for ycell in room.cells if self.wanted else ():
            source = ycell.get("source")
            cell_id = str(ycell.get("id"))
            # only real text edits: an outputs-only replace leaves the text to its editors
            if isinstance(source, Text) and self.wanted.get(cell_id, str(source)) != str(source):
                self.targets[cell_id] = source
        self.before = room.doc.get_update() if self.targets else b""
        self.reloads = room.reloads  # a reload replaces the texts watched here
        self.started = time.monotonic()
        self.received: list[tuple[bool, bytes]] = []
        if self.targets:
            room.recorders.append(self.received)

    def stop(self) -> None:
        if self.received in self.room.recorders:
            self.room.recorders.remove(self.received)

    def merged(self) -> list[str]:
        """Targets whose text is not what the transaction wrote (someone's edit merged)."""
        found = []
        for cell_id, text in self.targets.items():
            try:
                now = str(text)
            except Exception:  # the cell was replaced whole (its type changed): not a merge
                continue
            if now != self.wanted[cell_id]:
                found.append(cell_id)
        return found

    def _rebuilt(self, updates: list[bytes]) -> Doc[Any]:
        """The document before this transaction plus ``updates`` (an update that builds on
        something missing here stays pending: it changes nothing)."""
        from pycrdt import Doc

        doc: Doc[Any] = Doc()
        doc.apply_update(self.before)
        for update in updates:
            doc.apply_update(update)
        return doc

    def _texts(self, doc: Doc[Any]) -> dict[str, str]:
        from pycrdt import Array

        return {
            str(c.get("id")): str(c.get("source", ""))
            for c in doc.get("cells", type=Array)
            if str(c.get("id")) in self.targets
        }

    def all_relayed(self, own: bytes) -> bool:
        """Whether everything the room holds came here relayed too. An answer to a sync
        request can bring a change before the server relays it; only the relay says in which
        order the server applied it (call holding the room's ``cond``)."""
        relayed = [update for was_relayed, update in self.received if was_relayed]
        return _clocks(self._rebuilt([own, *relayed]).get_state()) == _clocks(
            self.room.doc.get_state()
        )

    def theirs(self, own: bytes) -> _Theirs:
        """Each target's text as the others left it: the document before this transaction
        plus what the others did since, leaving out every update that brings this client's
        items (the room's echo of this transaction; an update that builds on it cannot apply
        without it, so none of it leaks in).

        The server relays a transaction as IT applied it: a deletion of text someone deleted
        first is not in the relay. So an edit that reached the server before this one comes
        with all its deletions (exact), but one that reached it after this one (it is relayed
        after this one's echo) lacks its deletions of the text this transaction deleted:
        whether they kept that text is known nowhere. Rebuilt from the relay, a full
        replacement of theirs would come back as the old text followed by theirs. Then their
        text is the room's without this transaction's own text (what it deleted stays
        deleted), and the old text is named in ``unknown``."""
        mine = self.room.doc.client_id
        before = self._rebuilt([])
        own_clock = _clocks(before.get_state()).get(mine, 0)
        complete = self.all_relayed(own)
        with_own = self._rebuilt([own])
        seen = self._texts(with_own)
        kept: list[bytes] = []
        after_ours = echoed = late = False
        for relayed, update in self.received:
            if not relayed and complete:
                continue  # its changes come (came) relayed as well, in the server's order
            if _clocks(self._rebuilt([*kept, update]).get_state()).get(mine, 0) != own_clock:
                echoed = True  # brings this transaction's items
                continue
            with_own.apply_update(update)
            now = self._texts(with_own)
            if now != seen:  # else: only what this transaction did already (its echo)
                if self._texts(self._rebuilt([*kept, update])) == self._texts(self._rebuilt(kept)):
                    after_ours = True  # it touched only this transaction's text
                else:  # made concurrently: applied by the server after this one?
                    late = late or echoed or not relayed
                kept.append(update)
            seen = now
        texts = self._texts(self._rebuilt(kept))
        if not late:
            return _Theirs(texts, after_ours)
        without_own = self._texts(self._without_own(before))
        old = self._texts(before)
        unknown = {k: old[k] for k, v in without_own.items() if texts.get(k) != v and k in old}
        return _Theirs(without_own, after_ours, unknown)

    def _without_own(self, before: Doc[Any]) -> Doc[Any]:
        """The room's document now without this client's items since ``before``: everything
        the others added (what builds on this transaction's items stays pending) and every
        deletion (the room cannot say who deleted what)."""
        from pycrdt import Encoder

        state = _clocks(before.get_state())
        state[self.room.doc.client_id] = _clocks(self.room.doc.get_state()).get(
            self.room.doc.client_id, 0
        )
        encoder = Encoder()
        encoder.write_var_uint(len(state))
        for client, clock in state.items():
            encoder.write_var_uint(client)
            encoder.write_var_uint(clock)
        return self._rebuilt([self.room.doc.get_update(encoder.to_bytes())])


def _merge_message(cell_id: str, unknown: str | None) -> str:
    return (
        f"cell {cell_id!r} was edited by someone else while this step changed it; the cell "
        "keeps their text and none of the step's"
        + (
            " (their edit reached the server just after the step's, so whether they kept the "
            f"text the step replaced, {_excerpt(unknown)}, cannot be known: it is left out)"
            if unknown
            else ""
        )
        + ": review the cell and re-plan"
    )


def _excerpt(text: str, limit: int = 60) -> str:
    """``text`` quoted on one line, cut to about ``limit`` characters."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _clocks(state: bytes) -> dict[int, int]:
    """An encoded Yjs state vector (var-uint count, then client and clock) as a dict."""

    def var_uint(at: int) -> tuple[int, int]:
        value = shift = 0
        while True:
            byte = state[at]
            value |= (byte & 0x7F) << shift
            at += 1
            if byte < 0x80:
                return value, at
            shift += 7

    count, at = var_uint(0)
    clocks = {}
    for _ in range(count):
        client, at = var_uint(at)
        clocks[client], at = var_uint(at)
    return clocks


def _check(txn: _Txn, current: dict[str, Cell]) -> list[Cell]:
    """Refuse the whole transaction if a cell it changes was changed by someone else since the
    transaction began, or vanished (nothing is applied); else the cells after it (a dry run,
    so that applying cannot fail half way)."""
    for op in txn.ops:
        target = op.cell_id if op.kind in ("replace", "delete", "move") else None
        if target is None or target not in txn.base:
            continue
        now = current.get(target)
        if now is None:
            raise ConflictError(
                f"cell {target!r} was deleted by someone else while this change was being "
                "applied; nothing was applied: review the notebook and re-plan"
            )
        if now != txn.base[target]:
            raise ConflictError(
                f"cell {target!r} was edited by someone else while this change was being "
                "applied; nothing was applied: review the cell and re-plan"
            )
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


def _shared_map(parent: Map[Any], key: str) -> Map[Any]:
    """``parent[key]`` as a shared map: created when absent, converted once when it holds a
    whole JSON object (entries kept), replaced when it holds anything else."""
    from pycrdt import Map

    child = parent.get(key)
    if isinstance(child, Map):
        return child
    entries = child if isinstance(child, dict) else {}
    if key in parent:
        del parent[key]
    parent[key] = Map(entries)
    found: Map[Any] = parent[key]
    return found


def _apply_parts(ymeta: Map[Any], key: str, changes: Mapping[MetadataPath, Any], old: Any) -> Any:
    """``update_metadata`` on the shared document: maps down each path, the value at its end,
    written as its difference from what is there (``old``: metadata[key] as JSON now). The
    JSON after the changes is returned."""
    from pycrdt import Map

    metadata = _shared_map(ymeta, "metadata")
    for path, value in changes.items():
        node = _shared_map(metadata, key)
        for part in path[:-1]:
            if value is DELETE and not isinstance(node.get(part), Map | dict):
                break  # nothing there to delete
            node = _shared_map(node, part)
        else:
            last = path[-1]
            if value is DELETE:
                if last in node:
                    del node[last]
            else:
                _write_entry(node, last, _json_at(old, path), value)
        old = apply_metadata_changes(old, {path: value})
    return old


# -- writing metadata by difference ----------------------------------------------------------
# A plan is one entry (plans/<id>) that every step rewrites; written whole, each step's update
# would carry the whole plan (35 KB at 100 steps, 3.4 MB for the run), and the server, every
# page and every other client would decode it. Instead an entry written a second time becomes
# a shared map (or array) of its parts, one level at a time, and from then on only the parts
# that differ travel: a step's update carries its status and its result.

_ABSENT: Any = object()


def _json_at(root: Any, path: MetadataPath) -> Any:
    """The JSON value at ``path`` below ``root``, or _ABSENT."""
    node = root
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return _ABSENT
        node = node[part]
    return node


def _same(old: Any, new: Any) -> bool:
    return old is new or (old is not _ABSENT and old == new)


def _shared_level(value: Any) -> Any:
    """A dict as a shared map, a list as a shared array (their items stay plain values)."""
    from pycrdt import Array, Map

    if isinstance(value, dict):
        return Map(value)
    if isinstance(value, list):
        return Array(value)
    return value


def _write_entry(parent: Map[Any], key: str, old: Any, new: Any) -> None:
    """``parent[key] = new``, where ``parent[key]`` holds the JSON ``old`` (or _ABSENT):
    nothing when equal; into the shared map/array by difference when there is one; else the
    value, as shared parts when it replaces an object or a list (it will change again)."""
    from pycrdt import Array, Map

    if _same(old, new):
        return
    current = parent.get(key) if old is not _ABSENT else None
    if isinstance(current, Map) and isinstance(old, dict) and isinstance(new, dict):
        _merge_map(current, old, new)
        return
    # (an array whose length differs from ``old`` is not what it describes: written whole)
    if (
        isinstance(current, Array)
        and isinstance(old, list)
        and isinstance(new, list)
        and len(current) == len(old)
    ):
        _merge_array(current, old, new)
        return
    if key in parent:  # delete then set: every reader sees a replaced key
        del parent[key]
    rewrite = isinstance(old, dict | list) and isinstance(new, dict | list)
    parent[key] = _shared_level(new) if rewrite else new


def _merge_map(ymap: Map[Any], old: dict[str, Any], new: dict[str, Any]) -> None:
    for gone in old.keys() - new.keys():
        if gone in ymap:
            del ymap[gone]
    for k, v in new.items():
        _write_entry(ymap, k, old.get(k, _ABSENT), v)


def _merge_array(yarray: Array[Any], old: list[Any], new: list[Any]) -> None:
    """Items that differ in place, then what was appended or cut off (lists in a plan grow
    at their end)."""
    from pycrdt import Array, Map

    for i in range(min(len(old), len(new))):
        o, v = old[i], new[i]
        if _same(o, v):
            continue
        current = yarray[i]
        if isinstance(current, Map) and isinstance(o, dict) and isinstance(v, dict):
            _merge_map(current, o, v)
        elif isinstance(current, Array) and isinstance(o, list) and isinstance(v, list):
            if len(current) == len(o):
                _merge_array(current, o, v)
            else:
                yarray[i] = _shared_level(v)
        else:
            rewrite = isinstance(o, dict | list) and isinstance(v, dict | list)
            yarray[i] = _shared_level(v) if rewrite else v
    if len(new) > len(old):
        yarray.extend(new[len(old) :])
    elif len(old) > len(new):
        del yarray[len(new) : len(old)]


def _replace(ynb: Any, index: int, cell: Cell) -> None:
    """Change only what differs, so open editors keep cursors and unrelated fields."""
    from pycrdt import Array, Map

    ycell = ynb.ycells[index]
    old = _to_cell(ycell.to_py() or {})
    if old.cell_type != cell.cell_type:
        ynb.ycells[index] = ynb.create_ycell(_cell_dict(cell))
        return
    if old.source != cell.source:
        ynb.set_cell(index, source=cell.source)
    if old.metadata != cell.metadata:
        ycell["metadata"] = Map(json.loads(json.dumps(cell.metadata)))
    if cell.cell_type == "code":
        if old.outputs != cell.outputs:
            youtputs = ycell.get("outputs")
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


def open_live(
    server_url: str, token: str, path: str, *, description: str | None = None
) -> LiveNotebook:
    """Connect to the room of ``path`` (relative to the server's root) and sync it."""
    url = server_url if server_url.endswith("/") else server_url + "/"
    return LiveNotebook(RoomAddress(url, token, path), description=description)
