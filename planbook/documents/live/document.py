"""The notebook as the shared document of a JupyterLab collaboration room (jupyter-collaboration).

``LiveNotebook`` is the ``NotebookDocument`` of the live backend. A background thread keeps a
local pycrdt copy of the room's document in sync over its websocket (``room.Room``), so
``cells()`` reads local memory and sees other clients' edits as soon as they arrive (converted
once per change, ``convert``). A ``transaction()`` is buffered: its operations change an overlay
that ``cells()`` shows inside the transaction, and at the end they are checked against the
current shared document and applied in ONE pycrdt transaction (``operations``), so the room
gets one update: every open page shows the whole change or none of it. The update is confirmed
by a sync request sent after it (the server answers requests in order, so the answer proves it
has the update). A commit sends that request and waits for its answer only when it rewrote a
cell's text (a merge must be looked for at once, ``merges``); otherwise its update goes alone,
and the next request (a commit's that compares cells, a save's: ``make_durable``, ``close()``'s,
or one every ``room.ASK_EVERY`` updates) confirms it. A commit compares the cells it rewrites,
deletes or moves with the server's state, asked for when its transaction first changed such a
cell; one that changes no existing cell asks nothing and waits for no answer (``_fresh``), so a
run of inserted cells costs no round trip per step, and one message: its update. The server
saves the file on request, and on its own about a second after the last change
(jupyter-collaboration's save delay).

Metadata is written by difference (``metadata``); what it holds is cached as JSON until someone
else changes it.
"""

from __future__ import annotations

import contextlib
import copy
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from planbook.documents.base import CellPlace, MetadataPath, apply_metadata_changes
from planbook.documents.live.address import RoomAddress
from planbook.documents.live.merges import LateMerge, MergeWatches
from planbook.documents.live.operations import METADATA_OPS, Op, Txn, apply_ops, check
from planbook.documents.live.reads import SharedReads
from planbook.documents.live.room import Room, Ticket
from planbook.documents.live.shared_copy import merged_update
from planbook.errors import LiveConnectionError
from planbook.model.cell import Cell, CellOutline

#: The operations whose commit compares a cell with the room's (``operations.check``).
_COMPARED = frozenset({"replace", "delete", "move"})


def _own_copy(cell: Cell) -> Cell:
    """A copy of ``cell`` with its own metadata dict and outputs list. (The engine reads the
    cells several times per step: ``copy.copy`` is a third of ``model_copy(update=...)``.)"""
    new = copy.copy(cell)
    fields = new.__dict__
    fields["metadata"] = dict(cell.metadata)
    fields["outputs"] = list(cell.outputs)
    return new


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
        self._saved_version = -1  # the room's version at the last confirmed save
        self._saved_at = float("-inf")  # and when (time.monotonic)
        self._unconfirmed: Ticket | None = None  # the last commit's, while not confirmed
        #: Inside ``coalesced``: how deep; the metadata changes kept for the next commit (a
        #: list replaced, never changed in place), and the metadata as read with them, by key.
        self._coalescing = 0
        self._kept: list[Op] = []
        self._kept_reads: dict[str, tuple[Any, list[Op], Any]] = {}
        self._room = Room(address, self._replay, connect_timeout=connect_timeout)
        self._reads = SharedReads(self._room)
        self._merges = MergeWatches(self._room, put_back=self._reads.forget_cells)
        try:
            self._ensure_ids()
        except BaseException:
            self.close()
            raise

    def _ensure_ids(self) -> None:
        """Steps target cells by id, so ids must survive a save: upgrade an nbformat 4.4
        notebook (the server strips ids when saving those) and fill missing or repeated ids,
        as the file backend does."""
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
        cells = txn.cells if txn is not None else self._reads.cells()
        # the cached cells are shared: callers get their own objects and top-level containers
        # (as the file backend gives them), without the cost of a deep copy of every output
        return [_own_copy(c) for c in cells]

    def outline(self) -> list[CellOutline]:
        """``cells()`` as ids, types and sources, without a copy (documents/base.py)."""
        txn = self._txn()
        cells = txn.cells if txn is not None else self._reads.cells()
        return [CellOutline(c.id, c.cell_type, c.source) for c in cells]

    def find_cell(self, cell_id: str) -> CellPlace | None:
        """The cell with ``cell_id`` and its place, converting nothing but that cell (see
        ``NotebookDocument.find_cell``)."""
        txn = self._txn()
        if txn is not None:
            cells, ids = txn.cells, txn.ids
        else:
            cells = self._reads.cells()
            ids = self._reads.ids_of(cells)
        try:
            i = ids.index(cell_id)
        except ValueError:
            return None
        return CellPlace(i, _own_copy(cells[i]), ids[i - 1] if i > 0 else None)

    def get_metadata(self, key: str) -> Any | None:
        txn = self._txn()
        if txn is None and self._kept:
            return self._with_kept(key)
        if txn is not None and key in txn.meta:
            value = json.loads(json.dumps(txn.meta[key]))
        else:
            value = self._reads.metadata(key)
        if txn is not None and txn.parts.get(key):
            for changes in txn.parts[key]:
                value = apply_metadata_changes(value, changes)
        return value

    def _with_kept(self, key: str) -> Any | None:
        """``metadata[key]`` with the changes ``coalesced`` keeps for the next commit: the same
        object while neither the room's value nor what is kept changed (a record compared
        with the one saved last is then the same object: no deep comparison)."""
        base, kept = self._reads.metadata(key), self._kept
        hit = self._kept_reads.get(key)
        if hit is not None and hit[0] is base and hit[1] is kept:
            return hit[2]
        value = base
        for op in kept:
            if op.key != key:
                continue
            if op.kind == "meta":
                value = json.loads(json.dumps(op.value))
            else:
                value = apply_metadata_changes(value, op.value)
        self._kept_reads[key] = (base, kept, value)
        return value

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
        saves on its own about a second after each change. What ``coalesced`` keeps goes
        first."""
        self.write_pending()
        return self._room.save(timeout)

    def make_durable(
        self, timeout: float | None = None, *, unless_saved_within: float = 0.0
    ) -> str:
        """Make sure the file on disk holds everything committed so far: ask the server to
        save the room and wait for its answer (bounded; a "skipped" save is asked again).
        "" when saved (or nothing changed since the last save, or a save was confirmed less
        than ``unless_saved_within`` seconds ago), else one line saying why not; the server
        then still saves on its own about a second after the last change. What ``coalesced``
        keeps is sent first: "durable" covers everything the caller changed."""
        try:
            self.write_pending()
        except LiveConnectionError as exc:
            return str(exc)
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

    def _txn(self) -> Txn | None:
        txn: Txn | None = getattr(self._local, "txn", None)
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
            txn = self._begin()
            self._local.txn = txn
            try:
                yield
            finally:
                self._local.txn = None
            if not txn.ops:
                return
            if self._coalescing and all(op.kind in METADATA_OPS for op in txn.ops):
                self._keep(txn.ops)
                return
            self._commit(txn)  # what was kept went with it; a failed commit keeps it
            self._keep([])

    def _begin(self) -> Txn:
        """A transaction on the cells as they are, holding what ``coalesced`` kept (first, as
        if made by it)."""
        # the cached cells are never mutated (ops replace them), so sharing them is safe
        shared = self._reads.cells()
        shared_ids = self._reads.ids_of(shared)
        txn = Txn(
            cells=list(shared),
            began=shared,
            began_ids=shared_ids,
            ids=list(shared_ids),
            reloads=self._room.reloads,
        )
        for op in self._kept:
            txn.take(op)
        return txn

    def _keep(self, ops: list[Op]) -> None:
        self._kept = ops
        self._kept_reads = {}

    # -- changes kept for the next commit ---------------------------------------------------

    @contextlib.contextmanager
    def coalesced(self) -> Iterator[None]:
        """Inside, a transaction that changes only the metadata (planbook's record: an
        approval, a failed step, a code step's "running" and checkpoint) is kept, and goes to
        the room with the next commit, in its update: an approval travels with its first
        step's cell (one update where there were two, and one less the server relays to every
        page). Reads show what is kept. ``write_pending`` sends it alone (before a step's
        code runs), as do ``make_durable``, ``save``, ``close`` and the block's end. A kept
        change reaches the room after the changes made before it, as a commit would: no
        page or file ever holds a step without its approval. A stop before it is sent loses
        it, as it loses a commit the server never saved (docs/live.md, "Saved when it
        matters")."""
        self._coalescing += 1
        try:
            yield
        finally:
            self._coalescing -= 1
            if self._coalescing == 0:
                # Unreachable: still kept, for the next commit (as an update the server has
                # not confirmed is sent again); the run's end said so (``make_durable``).
                with contextlib.suppress(LiveConnectionError):
                    self.write_pending()

    @property
    def save_kept(self) -> bool:
        """``coalesced`` keeps a change not sent yet."""
        return bool(self._kept)

    def write_pending(self) -> None:
        """Send what ``coalesced`` kept, in one commit of its own (LiveConnectionError when
        the room stays unreachable: it is kept then)."""
        with self._writer:
            if not self._kept or self._txn() is not None:
                return  # (inside a transaction: its commit takes it)
            self._commit(self._begin())
            self._keep([])

    def set_metadata(self, key: str, value: Any) -> None:
        with self.transaction():
            self._require_txn().set_metadata(key, value)

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
            self._require_txn().update_metadata(key, private)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """One writer in this process; the room orders writers of other processes."""
        with self._writer:
            yield

    def insert_cell(self, index: int, cell: Cell) -> None:
        with self.transaction():
            self._require_txn().insert_cell(index, cell)

    def replace_cell(self, cell: Cell) -> None:
        with self.transaction():
            txn = self._require_txn()
            txn.replace_cell(cell)
            self._ask_for(txn)

    def delete_cell(self, cell_id: str) -> None:
        with self.transaction():
            txn = self._require_txn()
            txn.delete_cell(cell_id)
            self._ask_for(txn)

    def move_cell(self, cell_id: str, index: int) -> None:
        with self.transaction():
            txn = self._require_txn()
            txn.move_cell(cell_id, index)
            self._ask_for(txn)

    def _ask_for(self, txn: Txn) -> None:
        """A transaction that rewrites, deletes or moves a cell will compare it with the
        server's state at commit: ask for that state now, so that the round trip overlaps the
        rest of the transaction. (Asked only then: a run of inserting steps sends no request
        of its own, only its updates and the requests that confirm them.)"""
        if txn.asked is None:
            txn.asked, txn.asked_at = self._room.ask(), time.monotonic()

    def _require_txn(self) -> Txn:
        txn = self._txn()
        assert txn is not None
        return txn

    # -- commit --------------------------------------------------------------------------------

    def _commit(self, txn: Txn) -> None:
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
            shared = self._reads.cells()
            after, after_ids = check(txn, shared, self._reads.ids_of(shared))
            watch = self._merges.start(txn.ops)
            try:
                update = self._apply(txn.ops, strict=True)
                self._reads.remember_cells(after, after_ids)  # what the update made
                self._hand_over(update, txn.ops, confirm_now=bool(watch.targets))
            except BaseException:
                watch.stop()
                raise
        if watch.targets:
            self._merges.take_back_if_merged(watch, update, self.confirm_timeout)

    #: A sync request sent when a transaction began serves its commit if it is younger than
    #: this (seconds); else the commit asks again.
    FRESH_FOR = 0.25

    def _fresh(self, txn: Txn) -> bool:
        """Whether the answer to the request sent when ``txn`` first rewrote, deleted or moved
        a cell (``_ask_for``) came, on the same connection, and the request is recent. Its
        round trip then overlapped the transaction's own work instead of adding to it. The
        check at commit sees what the server had when the request was sent and every update
        that arrived since (the server sends each one at once); asking at commit time narrows
        that only by the rest of the transaction's duration, bounded by FRESH_FOR.

        A commit that changes no existing cell (it inserts cells, writes the record) waits for
        no answer while the room is connected: its check compares no cell's content, and the
        update goes after everything this copy holds. What the wait would add is a deletion of
        an insert's anchor in the last round trip: the room then keeps the new cell where the
        anchor was, as it does for any deletion that crosses an insert on the network. A run
        of cell-inserting steps is then paced by its own work, not by one round trip a step."""
        if not any(op.kind in _COMPARED for op in txn.ops):
            return self._room.connected
        if txn.asked is None or time.monotonic() - txn.asked_at > self.FRESH_FOR:
            return False
        return self._room.answered(txn.asked, self.confirm_timeout, while_connected=True)

    def _hand_over(self, update: bytes, ops: list[Op], *, confirm_now: bool) -> None:
        """Send a commit's update. Its confirmation is asked for and awaited here only when the
        commit rewrote a cell's text (a merge must be looked for at once); otherwise the update
        goes alone and the next request confirms it (the server answers in order): a compared
        commit's, a save's, ``close()``'s, or one every ``room.ASK_EVERY`` updates. Until
        confirmed, the update (the change and its record, together) is resent after a
        reconnect or replayed after a reload."""
        if confirm_now:
            self._room.send(update, ops, self.confirm_timeout)
        else:
            self._unconfirmed = self._room.post(update, ops, ask=False)

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
            # its fate is decided: the room reloads on reconnect and is reconciled, so the
            # next save waits for no ticket that can never be confirmed
            self._unconfirmed = None
            return str(exc)
        return ""

    def late_merges(self, *, sync: bool = True) -> list[LateMerge]:
        """Edits made on a target's text before a commit rewrote it that reached the server
        only after the commit looked for a merge (a network's delay): each target's text as
        they made it, for the caller to put back with its record of the change, in one
        transaction (see ``MergeWatches.late_merges``). ``sync=False``: look at what the
        server sent so far, without asking."""
        return self._merges.late_merges(sync=sync, timeout=self.confirm_timeout)

    def _replay(self, payloads: list[Any]) -> bytes:
        """After a reload: re-apply changes the server never confirmed (idempotently)."""
        return self._apply([op for ops in payloads for op in ops], strict=False)

    def _apply(self, ops: list[Op], *, strict: bool) -> bytes:
        """Apply ``ops`` to the shared document in one pycrdt transaction; the update.
        ``strict=False`` (a replay) skips what is already there or gone."""
        # its readers are told below and by the caller; its update is its transactions' own
        with self._room.own_change() as updates:
            views = apply_ops(
                self._room,
                ops,
                cell_ids=self._reads.cell_ids,
                metadata=self._reads.metadata,
                strict=strict,
            )
        self._reads.remember_metadata(views)  # without reading it back (O(plan))
        self._room.changed()
        return merged_update(updates)

    def close(self) -> None:
        """Leave the room and stop the sync thread (the shared document stays on the server),
        once the server has the last commit (bounded: ``confirm_timeout``)."""
        with contextlib.suppress(LiveConnectionError):  # leaving anyway: lost as unsaved
            self.write_pending()
        last = self._unconfirmed
        if last is not None and not last.done and self._room.connected:
            with contextlib.suppress(LiveConnectionError):  # leaving anyway
                self._room.confirm(last, self.confirm_timeout)
        self._merges.stop()
        self._room.close()

    def __enter__(self) -> LiveNotebook:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<LiveNotebook {self.address.path!r} on {self.address.server_url}>"


def open_live(
    server_url: str,
    token: str,
    path: str,
    *,
    description: str | None = None,
    headers: tuple[tuple[str, str], ...] = (),
) -> LiveNotebook:
    """Connect to the room of ``path`` (relative to the server's root) and sync it; with
    ``headers``, sent as credentials on every request (a server without a token)."""
    url = server_url if server_url.endswith("/") else server_url + "/"
    return LiveNotebook(RoomAddress(url, token, path, headers), description=description)
