"""The operations a live transaction buffers: checked against the shared document at commit
(a conflict refuses them all), then applied to it in one pycrdt transaction.

A transaction's operations change an overlay of the cells (``Txn``) that reads inside the
transaction show; nothing reaches the shared document until ``check`` found every target as the
transaction saw it, so the room gets one update: every open page shows the whole change or none
of it. A replay after a reload applies them again without the check (``strict=False``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from planbook.documents.base import DELETE, MetadataPath
from planbook.documents.live.convert import cell_dict, normal, to_cell, write_cell
from planbook.documents.live.metadata import apply_parts
from planbook.documents.live.room import Room
from planbook.errors import ConflictError, UnknownCell
from planbook.model.cell import Cell

#: The operations that change only the notebook's metadata (planbook's record among it).
METADATA_OPS = frozenset({"meta", "meta_part"})


@dataclass
class Op:
    """One buffered change of a transaction."""

    kind: str  # "meta" | "meta_part" | "insert" | "replace" | "delete" | "move"
    cell: Cell | None = None
    cell_id: str | None = None
    after: str | None = None  # anchor for insert/move: the id of the cell before, None = top
    key: str | None = None
    value: Any = None  # "meta": the whole value; "meta_part": {path: value or DELETE}


@dataclass
class Txn:
    """A transaction under way: the cells as its operations changed them (what reads inside
    it show), and the operations, recorded by the methods below."""

    cells: list[Cell]
    #: The shared cells and their ids when the transaction began (never mutated): what a cell
    #: it rewrites, deletes or moves is compared with at commit (``as_began``).
    began: list[Cell]
    began_ids: list[str]
    #: The ids of ``cells``, kept in step with it: a lookup by id is a C-speed list scan.
    ids: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    #: update_metadata changes per key since the last whole value (applied when read)
    parts: dict[str, list[Mapping[MetadataPath, Any]]] = field(default_factory=dict)
    ops: list[Op] = field(default_factory=list)
    depth: int = 0
    #: The sync request sent when the transaction first rewrote, deleted or moved a cell, and
    #: when (see ``LiveNotebook._fresh``).
    asked: tuple[int, int] | None = None
    asked_at: float = 0.0
    #: The room's reload count when the transaction began: its changes were made against
    #: that copy of the document (metadata by part: against the record read from it).
    reloads: int = 0
    #: ``began`` by id, made at the first lookup: a transaction that compares no cell never
    #: pays for it (O(notebook)).
    _began_by_id: dict[str, Cell] | None = field(default=None, repr=False)

    def as_began(self, cell_id: str) -> Cell | None:
        """The cell ``cell_id`` as it was when the transaction began (None: it was not)."""
        if self._began_by_id is None:
            self._began_by_id = dict(zip(self.began_ids, self.began, strict=True))
        return self._began_by_id.get(cell_id)

    def take(self, op: Op) -> None:
        """A change of the metadata an earlier transaction kept (``LiveNotebook.coalesced``),
        as if made here: reads inside show it, and the commit sends it first."""
        assert op.key is not None and op.kind in METADATA_OPS
        if op.kind == "meta":
            self.meta[op.key] = op.value
            self.parts.pop(op.key, None)
        else:
            self.parts.setdefault(op.key, []).append(op.value)
        self.ops.append(op)

    def set_metadata(self, key: str, value: Any) -> None:
        value = json.loads(json.dumps(value))  # JSON only, and a private copy
        self.meta[key] = value
        self.parts.pop(key, None)  # the whole value replaces earlier changes by part
        self.ops.append(Op("meta", key=key, value=value))

    def update_metadata(self, key: str, changes: dict[MetadataPath, Any]) -> None:
        """``changes`` (paths checked, values the caller's own) applied when read. Merged
        into the transaction's last changes by part of the same key, if any: the commit then
        walks the shared maps to each path once (an approval kept by ``coalesced`` and its
        first step's record both rewrite the plan's entry)."""
        parts = self.parts.setdefault(key, [])
        last = next(
            (
                i
                for i in range(len(self.ops) - 1, -1, -1)
                if self.ops[i].kind in METADATA_OPS and self.ops[i].key == key
            ),
            None,
        )
        # (the last one for the key a "meta_part": ``parts`` ends with its changes)
        if last is not None and self.ops[last].kind == "meta_part":
            merged = merged_changes(self.ops[last].value, changes)
            if merged is not None:
                # new objects: an op a failed commit gives back to ``coalesced`` stays as it was
                self.ops[last] = Op("meta_part", key=key, value=merged)
                parts[-1] = merged
                return
        parts.append(changes)
        self.ops.append(Op("meta_part", key=key, value=changes))

    def insert_cell(self, index: int, cell: Cell) -> None:
        if cell.id in self.ids:
            raise ValueError(f"a cell with id {cell.id!r} already exists")
        index = max(0, min(index, len(self.cells)))
        after = self.ids[index - 1] if index > 0 else None
        self.cells.insert(index, cell.model_copy(deep=True))
        self.ids.insert(index, cell.id)
        self.ops.append(Op("insert", cell=cell.model_copy(deep=True), after=after))

    def replace_cell(self, cell: Cell) -> None:
        self.cells[self._index(cell.id)] = cell.model_copy(deep=True)
        self.ops.append(Op("replace", cell=cell.model_copy(deep=True), cell_id=cell.id))

    def delete_cell(self, cell_id: str) -> None:
        i = self._index(cell_id)
        del self.cells[i]
        del self.ids[i]
        self.ops.append(Op("delete", cell_id=cell_id))

    def move_cell(self, cell_id: str, index: int) -> None:
        i = self._index(cell_id)
        cell = self.cells.pop(i)
        del self.ids[i]
        index = max(0, min(index, len(self.cells)))
        after = self.ids[index - 1] if index > 0 else None
        self.cells.insert(index, cell)
        self.ids.insert(index, cell_id)
        self.ops.append(Op("move", cell_id=cell_id, after=after))

    def _index(self, cell_id: str) -> int:
        try:
            return self.ids.index(cell_id)
        except ValueError:
            raise UnknownCell(cell_id) from None


def merged_changes(
    first: Mapping[MetadataPath, Any], then: Mapping[MetadataPath, Any]
) -> dict[MetadataPath, Any] | None:
    """Changes by part that make what ``first`` then ``then`` make, applied in order: the
    paths of ``first`` that a path of ``then`` replaces (the same path, or one below it) are
    left out, the others keep their order, and ``then`` follows. None when ``then`` deletes
    a path that ``first`` writes at or below: in order, the objects ``first`` made on the way
    stay (empty); merged, they would never be made."""
    out: dict[MetadataPath, Any] = {}
    for path, value in first.items():
        covering = [other for other in then if path[: len(other)] == other]
        if any(then[other] is DELETE for other in covering):
            return None
        if not covering:
            out[path] = value
    out.update(then)
    return out


#: Cell metadata a page writes of its own accord, never a person's edit: JupyterLab marks a code
#: cell ``trusted`` when it may render its outputs, e.g. as planbook's in-cell review trusts a
#: cell it is applying a step to, which reached the room while that step's edit was in flight.
PAGE_BOOKKEEPING = frozenset({"trusted"})


def edited(now: Cell, then: Cell) -> bool:
    """Whether ``now`` differs from ``then`` by more than a page's bookkeeping."""
    if now == then:
        return False
    if not (now.metadata.keys() | then.metadata.keys()) & PAGE_BOOKKEEPING:
        return True

    def plain(cell: Cell) -> Cell:
        kept = {k: v for k, v in cell.metadata.items() if k not in PAGE_BOOKKEEPING}
        return cell.model_copy(update={"metadata": kept})

    return plain(now) != plain(then)


def check(txn: Txn, shared: list[Cell], shared_ids: list[str]) -> tuple[list[Cell], list[str]]:
    """Refuse the whole transaction if a cell it changes was changed by someone else since the
    transaction began, or vanished (nothing is applied); else the cells after it and their ids
    (a dry run, so that applying cannot fail half way). ``shared``: the shared cells now,
    ``shared_ids`` their ids (both read-only here)."""
    current: dict[str, Cell] | None = None  # by id, made only when a cell is compared
    for op in txn.ops:
        target = op.cell_id if op.kind in ("replace", "delete", "move") else None
        then = None if target is None else txn.as_began(target)
        if target is None or then is None:
            continue
        if current is None:
            current = dict(zip(shared_ids, shared, strict=True))
        now = current.get(target)
        if now is None:
            raise ConflictError(
                f"cell {target!r} was deleted by someone else while this change was being "
                "applied; nothing was applied: review the notebook and re-plan"
            )
        if edited(now, then):
            raise ConflictError(
                f"cell {target!r} was edited by someone else while this change was being "
                "applied; nothing was applied: review the cell and re-plan"
            )
    cells = list(shared)
    ids = list(shared_ids)
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
            cells.insert(at, normal(op.cell))
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
                cells[i] = normal(op.cell)
                continue
            ids.pop(i)
            moved = cells.pop(i)
            if op.kind == "move":
                at = ids.index(op.after) + 1 if op.after is not None else 0
                ids.insert(at, op.cell_id)
                cells.insert(at, moved)
    return cells, ids


def apply_ops(
    room: Room,
    ops: list[Op],
    *,
    cell_ids: Callable[[], list[str]],
    metadata: Callable[[str], Any],
    strict: bool,
) -> dict[str, Any]:
    """Apply ``ops`` to the room's document in one pycrdt transaction (call holding the room's
    ``cond``); ``strict=False`` (a replay) skips what is already there or gone. ``cell_ids()``
    gives the shared cells' ids, ``metadata(key)`` metadata[key] as JSON now. Returns
    metadata[key] as JSON after the ops, for each key they change (without reading it back,
    which is O(plan))."""
    from jupyter_ydoc import YNotebook  # heavy: jupyter_ydoc (the live extra)
    from pycrdt import Map  # heavy: pycrdt (the live extra)

    doc, ycells = room.doc, room.cells
    # made for a replace only (see ``_new_ycell``), and outside the transaction: it attaches
    # an undo manager to the cells, which pycrdt refuses inside one
    ynb = YNotebook(doc) if any(op.kind == "replace" for op in ops) else None
    views: dict[str, Any] = {}
    with doc.transaction(origin="planbook"):
        ids = cell_ids()  # kept in step with ``ycells`` below, never read again
        for op in ops:
            if op.kind == "meta":
                assert op.key is not None
                meta = room.meta.get("metadata")
                if meta is None:
                    meta = room.meta["metadata"] = Map()
                if op.key in meta:  # replacing a key in place is not seen by every reader
                    del meta[op.key]
                meta[op.key] = op.value
                views[op.key] = op.value
            elif op.kind == "meta_part":
                assert op.key is not None
                if op.key not in views:
                    views[op.key] = metadata(op.key)
                views[op.key] = apply_parts(room.meta, op.key, op.value, views[op.key])
            elif op.kind == "insert":
                assert op.cell is not None
                if op.cell.id in ids:
                    if strict:
                        raise ValueError(f"a cell with id {op.cell.id!r} already exists")
                    continue
                at = ids.index(op.after) + 1 if op.after in ids else 0
                if op.after is not None and op.after not in ids:
                    at = len(ids)
                ycells.insert(at, _new_ycell(cell_dict(op.cell)))
                ids.insert(at, op.cell.id)
            elif op.kind == "delete":
                if op.cell_id in ids:
                    del ycells[ids.index(op.cell_id)]
                    ids.remove(op.cell_id)
            elif op.kind == "move":
                if op.cell_id not in ids:
                    continue
                i = ids.index(op.cell_id)
                moved = to_cell(ycells[i].to_py())
                del ycells[i]
                ids.pop(i)
                at = ids.index(op.after) + 1 if op.after in ids else 0
                # a fresh copy: Yjs arrays have no move the frontend understands
                ycells.insert(at, _new_ycell(cell_dict(moved)))
                ids.insert(at, op.cell_id)
            elif op.kind == "replace":
                assert op.cell is not None
                if op.cell.id in ids:
                    assert ynb is not None
                    write_cell(ynb, ids.index(op.cell.id), op.cell)
                elif not strict:
                    ycells.append(_new_ycell(cell_dict(op.cell)))
                    ids.append(op.cell.id)
    return views


def _new_ycell(cell: dict[str, Any]) -> Any:
    """A shared cell (not yet in any document) holding ``cell``, as JupyterLab makes one."""
    return _cell_maker().create_ycell(cell)


@cache
def _cell_maker() -> Any:
    """A YNotebook of a document of its own: one on the room's document attaches an undo
    manager to its cells, which then records every change until it is dropped."""
    from jupyter_ydoc import YNotebook  # heavy: jupyter_ydoc (the live extra)

    return YNotebook()
