"""The local copy of a room's shared document: a pycrdt ``Doc`` and a record of what changed in it.

The root types planbook reads (cells, meta, state); counters that grow with each change of the
cells and of the metadata (cache keys for readers); the cells changed in place by the last few
changes (a reader converts again only those); and the reloads: the copy replaced by what the
server holds, and why. The room keeps the copy in sync (``room.Room``, a ``SharedCopy``); all
of it is read and changed holding the room's ``cond``.
"""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from planbook.documents.collector import collector_paused

if TYPE_CHECKING:
    from pycrdt import Array, Doc, Map


class SharedCopy:
    """A pycrdt copy of a notebook's shared document, with the record of its changes."""

    def __init__(self) -> None:
        #: How often the copy was replaced by what the server holds (restart, file rewritten on
        #: disk, an update of unknown fate), and why the last time: a record kept in memory
        #: may no longer match the room after that.
        self.reloads = 0
        self.reload_reason = ""
        #: How often the server set the saved file's hash in the room's state (it does after
        #: each save that wrote the file, and only then).
        self.hash_writes = 0
        self.doc: Doc[Any]
        self.cells: Array[Any]
        self.meta: Map[Any]
        self._new_doc()

    def _new_doc(self) -> None:
        from pycrdt import Array, Doc, Map  # heavy: pycrdt (the live extra)

        self.doc = Doc(allow_multithreading=True)
        self._touched = False
        #: The updates of the transactions of a change made here, while it is under way
        #: (``own_change``), as pycrdt encodes them at their commit.
        self._own_updates: list[bytes] | None = None
        self._doc_subscription = self.doc.observe(self._on_transaction)
        self.cells = self.doc.get("cells", type=Array)
        self.meta = self.doc.get("meta", type=Map)
        #: Grows with every change of the cells (not of metadata or state): a cache key.
        self.cells_version = getattr(self, "cells_version", 0) + 1
        self._cells_observer = _told_its_signature(self._on_cells)
        self._meta_observer = _told_its_signature(self._on_meta)
        #: (cells_version, indices of the cells changed in place by that change, or None
        #: when cells were added, removed or moved), the last few: a reader's cache converts
        #: again only what changed (see ``cells_changed_since``).
        self._cell_changes: deque[tuple[int, frozenset[int] | None]] = deque(maxlen=64)
        self._cells_subscription = self.cells.observe_deep(self._cells_observer)
        #: Grows with every change of the notebook metadata (a cache key, as cells_version).
        self.meta_version = getattr(self, "meta_version", 0) + 1
        self._meta_subscription = self.meta.observe_deep(self._meta_observer)
        # The server deletes the saved file's hash from "state" when it reloads the room from
        # a file changed on disk (jupyter_ydoc's set); nothing else removes it.
        # (pycrdt drops an observer with the Python object of its map: keep both)
        self.state = self.doc.get("state", type=Map)
        self._state_subscription = self.state.observe(self._on_state)
        self._observing = True

    def stop_observing(self) -> None:
        """Drop the copy's observers, once nothing changes it any more (the room closed).
        pycrdt holds them on its Rust side, where Python's garbage collector cannot follow:
        a closed room, its notebook and the session on it stayed alive through them, about
        200 objects and the shared document at each notebook a process opened live."""
        if not self._observing:  # (closed twice)
            return
        self._observing = False
        self.doc.unobserve(self._doc_subscription)
        self.cells.unobserve(self._cells_subscription)
        self.meta.unobserve(self._meta_subscription)
        self.state.unobserve(self._state_subscription)

    def _on_transaction(self, event: Any) -> None:
        # called only for transactions that changed something (never read the doc in it)
        self._touched = True
        if self._own_updates is not None:
            self._own_updates.append(event.update)

    def _on_cells(self, events: Any) -> None:
        self.cells_version += 1
        touched: set[int] | None = set()
        for event in events:
            path = getattr(event, "path", None)
            if not path or not isinstance(path[0], int):  # the list itself changed
                touched = None
                break
            touched.add(path[0])  # type: ignore[union-attr]
        self._cell_changes.append(
            (self.cells_version, None if touched is None else frozenset(touched))
        )

    def cells_changed_since(self, version: int) -> frozenset[int] | None:
        """The indices of the cells changed in place since ``cells_version`` was ``version``
        (call holding ``cond``); None when that is not known (too long ago, another copy)
        or cells were added, removed or moved since."""
        if version > self.cells_version or self.cells_version - version > len(self._cell_changes):
            return None
        changed: set[int] = set()
        for number, touched in self._cell_changes:
            if number <= version:
                continue
            if touched is None:
                return None
            changed |= touched
        return frozenset(changed)

    def _on_meta(self, _events: Any) -> None:
        self.meta_version += 1

    @contextmanager
    def own_change(self) -> Iterator[list[bytes]]:
        """A change made here, whose result the caller hands to its readers itself (the
        cells and metadata a commit wrote): the deep observers are off during it, and the
        versions move once after it, as for a change of every cell and of the metadata.
        pycrdt makes Python events of everything a deep observer sees (a commit's record
        and cells, again), which cost a commit more than many of its writes.

        Yields the list that receives the update of each transaction made in it (``merged_update``
        makes them one): what the change sends, without diffing the whole document against the
        state before it (``Doc.get_update``, which grew with the notebook: about 0.1 ms a
        commit on 500 cells). Nothing else changes the copy meanwhile: the caller holds
        ``cond``, as the sync thread does to apply what the server sends."""
        # the collector held off from the first change of the document to the last (the
        # observers' too): see documents/collector.py
        with collector_paused():
            doc, observing = self.doc, self._observing
            if observing:  # (a closed room observes nothing)
                self.cells.unobserve(self._cells_subscription)
                self.meta.unobserve(self._meta_subscription)
            updates: list[bytes] = []
            self._own_updates = updates
            try:
                yield updates
            finally:
                self._own_updates = None
                # (a copy made since by a reload observes on its own)
                if self.doc is doc and observing and self._observing:
                    self._cells_subscription = self.cells.observe_deep(self._cells_observer)
                    self._meta_subscription = self.meta.observe_deep(self._meta_observer)
                self.cells_version += 1
                self._cell_changes.append((self.cells_version, None))
                self.meta_version += 1

    def _on_state(self, event: Any) -> None:
        keys = getattr(event, "keys", {}) or {}
        change = keys.get("hash")
        if isinstance(change, dict) and change.get("action") == "delete":
            self._reloaded("the file changed on disk and the server reloaded the notebook from it")
        elif isinstance(change, dict):  # the server wrote the file (see ``save``)
            self.hash_writes += 1

    def _reloaded(self, reason: str) -> None:
        self.reloads += 1
        self.reload_reason = reason


#: What a deep observer of the shared copy takes: the events.
_EVENTS_ONLY = inspect.Signature(
    [inspect.Parameter("events", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
)


def _told_its_signature(method: Callable[[Any], None]) -> Callable[[Any], None]:
    """``method`` as a function that carries its signature: pycrdt's ``observe_deep`` asks
    ``inspect.signature`` of its callback at every subscription (how many arguments to pass),
    9 µs for a bound method, and ``own_change`` subscribes two observers again at every
    commit; with the signature on the function the answer is an attribute read."""

    def observer(events: Any) -> None:
        method(events)

    observer.__signature__ = _EVENTS_ONLY  # type: ignore[attr-defined]
    return observer


def merged_update(updates: list[bytes]) -> bytes:
    """One update of the transactions ``own_change`` collected (b"" for none)."""
    if len(updates) < 2:
        return updates[0] if updates else b""
    from pycrdt import merge_updates  # heavy: pycrdt (the live extra)

    merged: bytes = merge_updates(*updates)
    return merged
