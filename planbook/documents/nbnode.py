"""Cell operations on a notebook held as a tree of plain JSON values, shared by the memory and
file backends.

The tree is the file's own JSON (multi-line strings split into lists as the file has them,
unknown keys kept). It is never changed in place: every change builds new containers along
its path and shares the rest. That makes a transaction's save point a shallow copy of the
root, and lets the serializer reuse the text of everything a change did not touch.
"""

from __future__ import annotations

import hashlib
import operator
import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from planbook.documents.base import CellPlace, MetadataPath, apply_metadata_changes
from planbook.documents.serializer import (
    JUPYTER,
    Style,
    join_bundle,
    join_output,
    join_text,
    split_bundle,
    split_output,
    split_text,
)
from planbook.errors import MetadataError, UnknownCell
from planbook.model.cell import Cell, CellOutline

Tree = dict[str, Any]
CELL_TYPES = ("code", "markdown", "raw")
_KNOWN_KEYS = frozenset(
    {"cell_type", "id", "metadata", "source", "execution_count", "outputs", "attachments"}
)
_VALID_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def check_cell_types(nb: Tree, where: str) -> None:
    """Refuse, in one line, a notebook whose cells planbook cannot represent faithfully."""
    cells = nb.get("cells")
    if not isinstance(cells, list):
        raise MetadataError(f"{where} is not a Jupyter notebook (no list of cells); pass an .ipynb")
    for number, cell in enumerate(cells, 1):
        kind = cell.get("cell_type") if isinstance(cell, dict) else None
        if kind not in CELL_TYPES:
            raise MetadataError(
                f"{where}: cell {number} has cell type {kind!r}, which nbformat 4 does not "
                "define (code, markdown, raw); planbook leaves this notebook alone: change or "
                "remove that cell first"
            )


def assign_ids(nb: Tree) -> bool:
    """Give every cell an id (the nbformat 4.5 upgrade JupyterLab makes when it saves), in
    memory only. The ids come from the cells' content, so two processes reading the same
    file before its first save agree on them. True when something changed."""
    changed = False
    seen: set[str] = set()
    cells = list(nb["cells"])
    for i, cell in enumerate(cells):
        cell_id = cell.get("id")
        if not isinstance(cell_id, str) or not _VALID_ID.match(cell_id) or cell_id in seen:
            text = f"{cell.get('cell_type')}\0{join_text(cell.get('source', ''))}"
            base = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
            cell_id, n = base, 0
            while cell_id in seen:
                n += 1
                cell_id = f"{base}-{n}"
            # First: in a file whose keys are not sorted, no neighbouring line changes.
            cells[i] = {"id": cell_id, **{k: v for k, v in cell.items() if k != "id"}}
            changed = True
        seen.add(cell_id)
    if changed:
        nb["cells"] = cells
    if (nb.get("nbformat"), nb.get("nbformat_minor", 0)) < (4, 5):
        nb["nbformat"], nb["nbformat_minor"] = 4, 5
        changed = True
    return changed


def normalize(nb: Tree, style: Style = JUPYTER) -> Tree:
    """The tree as ``style`` stores it (nbformat's: every multi-line string split)."""
    if not style.split_lines:
        return nb
    cells = []
    for cell in nb.get("cells", []):
        out = {**cell, "source": split_text(join_text(cell.get("source", "")), style)}
        if "outputs" in cell:
            out["outputs"] = [split_output(join_output(o), style) for o in cell["outputs"]]
        if isinstance(cell.get("attachments"), dict):
            out["attachments"] = {
                k: split_bundle(join_bundle(v), style) for k, v in cell["attachments"].items()
            }
        cells.append(out)
    return {**nb, "cells": cells}


def to_cell(raw: Tree) -> Cell:
    code = raw.get("cell_type") == "code"
    attachments = raw.get("attachments")
    return Cell(
        id=raw["id"],
        cell_type=raw.get("cell_type", "code"),
        source=join_text(raw.get("source", "")),
        metadata=raw.get("metadata", {}),
        outputs=[join_output(o) for o in raw.get("outputs", [])] if code else [],
        execution_count=raw.get("execution_count") if code else None,
        attachments={k: join_bundle(v) for k, v in attachments.items()}
        if isinstance(attachments, dict)
        else None,
    )


def to_raw(cell: Cell, style: Style, old: Tree | None = None, was: Cell | None = None) -> Tree:
    """``cell`` as the file stores it. Replacing ``old`` (which reads as ``was``): its unknown
    keys and key order are kept, and its unchanged parts are reused as they are."""
    fields: Tree = {
        "cell_type": cell.cell_type,
        "id": cell.id,
        "metadata": old["metadata"]
        if old is not None
        and was is not None
        and "metadata" in old
        and cell.metadata == was.metadata
        else cell.metadata,
        "source": old["source"]
        if old is not None and was is not None and cell.source == was.source
        else split_text(cell.source, style),
    }
    if cell.cell_type == "code":
        fields["execution_count"] = cell.execution_count
        same = old is not None and was is not None and "outputs" in old
        fields["outputs"] = (
            old["outputs"]  # type: ignore[index]
            if same and was.cell_type == "code" and cell.outputs == was.outputs  # type: ignore[union-attr]
            else [split_output(o, style) for o in cell.outputs]
        )
    elif cell.attachments is not None:
        # Kept as stored while unchanged: a file may hold an attachment unsplit (an SVG as one
        # string) although nbformat would split it; a save must not rewrite what no step changed.
        same = old is not None and was is not None and isinstance(old.get("attachments"), dict)
        fields["attachments"] = (
            old["attachments"]  # type: ignore[index]
            if same and cell.attachments == was.attachments  # type: ignore[union-attr]
            else {k: _kept_bundle(v, old, k, was, style) for k, v in cell.attachments.items()}
        )
    if old is None:
        return fields
    out = {k: fields.get(k, v) for k, v in old.items() if k in fields or k not in _KNOWN_KEYS}
    out.update((k, v) for k, v in fields.items() if k not in out)
    return out


def _kept_bundle(
    bundle: dict[str, Any], old: Tree | None, name: str, was: Cell | None, style: Style
) -> dict[str, Any]:
    """One attachment of a changed set: as stored when that attachment is unchanged."""
    if old is not None and was is not None and was.attachments is not None:
        stored = old["attachments"].get(name) if isinstance(old.get("attachments"), dict) else None
        if stored is not None and was.attachments.get(name) == bundle:
            return stored
    return split_bundle(bundle, style)


class NodeNotebook:
    """The NotebookDocument operations over the tree ``self._nb``; subclasses decide where it
    lives (``_load`` brings it up to date, ``_commit`` persists it)."""

    backend = "memory"
    description = "memory"

    def __init__(self, nb: Tree, style: Style = JUPYTER) -> None:
        self._nb = nb
        self.style = style
        self._depth = 0
        self._dirty = False
        self._mutex = threading.RLock()
        self._cell_cache: dict[int, tuple[Tree, Cell]] = {}
        #: The cells' list the last ``outline()`` read, and what it gave: kept while it is the
        #: same list or one holding the same raw cells in the same order (a change replaces a
        #: raw cell and the list, never edits one, as ``_cell_of`` and the serializer rely on).
        self._outline: tuple[list[Tree], list[CellOutline]] = ([], [])
        #: The cells' list the positions were read from, and each cell's position by id: a
        #: list is never changed in place, so the index holds while the list is the same one
        #: (a step looks up its targets a few times; a scan made a staged step on cell 1,990
        #: of 2,000 cost about a tenth more CPU than one on cell 10).
        self._positions: tuple[list[Tree], dict[Any, int]] = ([], {})

    def _load(self) -> None:
        """Bring ``self._nb`` up to date with the storage."""

    def _commit(self) -> None:
        """Persist ``self._nb``."""

    def _refresh(self) -> None:
        if self._depth == 0:
            self._load()

    @property
    def tree(self) -> Tree:
        """The notebook's JSON tree as it stands (read-only)."""
        self._refresh()
        return self._nb

    def cells(self) -> list[Cell]:
        with self._mutex:
            self._refresh()
            raws = self._nb["cells"]
            out = [self._cell_of(raw) for raw in raws]
            if len(self._cell_cache) > 2 * len(raws) + 64:
                self._cell_cache = {id(raw): self._cell_cache[id(raw)] for raw in raws}
            # Copies: the cached Cells stay as read, whatever a caller does with these.
            return [c.model_copy() for c in out]

    def outline(self) -> list[CellOutline]:
        """``cells()`` as ids, types and sources, from the converted cells without a copy
        (documents/base.py ``outline``)."""
        with self._mutex:
            self._refresh()
            raws = self._nb["cells"]
            seen, out = self._outline
            # the very list seen last time holds the same cells (never changed in place)
            if raws is not seen and (
                len(seen) != len(raws) or not all(map(operator.is_, seen, raws))
            ):
                out = [CellOutline(c.id, c.cell_type, c.source) for c in map(self._cell_of, raws)]
            self._outline = (raws, out)
            return list(out)

    def find_cell(self, cell_id: str) -> CellPlace | None:
        """The cell with ``cell_id`` and its place, converting only that cell (``cells()``
        converts and copies every cell: a step reads its targets a few times)."""
        with self._mutex:
            self._refresh()
            raws = self._nb["cells"]
            i = self._position_of(cell_id)
            if i is None:
                return None
            above = raws[i - 1].get("id") if i > 0 else None
            return CellPlace(i, self._cell_of(raws[i]).model_copy(), above)

    def _position_of(self, cell_id: str) -> int | None:
        """Where the cell with ``cell_id`` is, from the index of the cells' list as it is."""
        raws = self._nb["cells"]
        seen, index = self._positions
        if raws is not seen:
            # ids are unique once read (``assign_ids``); reversed, so the first one would win
            # all the same, as a scan finds it; built in C (map, zip, dict)
            ids = list(map(operator.methodcaller("get", "id"), raws))
            index = dict(zip(reversed(ids), range(len(ids) - 1, -1, -1), strict=True))
            self._positions = (raws, index)
        return index.get(cell_id)

    def _cell_of(self, raw: Tree) -> Cell:
        """The Cell a raw cell reads as, converted once per raw cell."""
        hit = self._cell_cache.get(id(raw))
        if hit is None or hit[0] is not raw:
            hit = (raw, to_cell(raw))
            self._cell_cache[id(raw)] = hit
        return hit[1]

    def get_metadata(self, key: str) -> Any | None:
        """The stored value itself, not a copy: callers treat it as read-only."""
        self._refresh()
        return self._nb.get("metadata", {}).get(key)

    def set_metadata(self, key: str, value: Any) -> None:
        """Stores ``value`` as given: the caller hands over a fresh object it will not mutate."""
        with self.transaction():
            self._nb["metadata"] = {**self._nb.get("metadata", {}), key: value}
            self._dirty = True

    def update_metadata(self, key: str, changes: Mapping[MetadataPath, Any]) -> None:
        if not changes:
            return
        with self.transaction():
            meta = dict(self._nb.get("metadata", {}))
            meta[key] = apply_metadata_changes(meta.get(key), changes)
            self._nb["metadata"] = meta
            self._dirty = True

    def locked(self) -> AbstractContextManager[object]:
        """In one process a re-entrant lock; the file backend adds a lock across processes."""
        return self._mutex

    def _set_cells(self, cells: list[Tree]) -> None:
        self._nb["cells"] = cells
        self._dirty = True

    def insert_cell(self, index: int, cell: Cell) -> None:
        with self.transaction():
            if self._position_of(cell.id) is not None:
                raise ValueError(f"a cell with id {cell.id!r} already exists")
            cells = list(self._nb["cells"])
            cells.insert(max(0, min(index, len(cells))), to_raw(cell, self.style))
            self._set_cells(cells)

    def replace_cell(self, cell: Cell) -> None:
        with self.transaction():
            i = self._index(cell.id)
            cells = list(self._nb["cells"])
            old = cells[i]
            cells[i] = to_raw(cell, self.style, old, self._cell_of(old))
            self._set_cells(cells)
            # the same ids in the same places: the index carries over to the new list
            self._positions = (cells, self._positions[1])

    def delete_cell(self, cell_id: str) -> None:
        with self.transaction():
            cells = list(self._nb["cells"])
            del cells[self._index(cell_id)]
            self._set_cells(cells)

    def move_cell(self, cell_id: str, index: int) -> None:
        with self.transaction():
            cells = list(self._nb["cells"])
            raw = cells.pop(self._index(cell_id))
            cells.insert(max(0, min(index, len(cells))), raw)
            self._set_cells(cells)

    def _index(self, cell_id: str) -> int:
        i = self._position_of(cell_id)
        if i is None:
            raise UnknownCell(cell_id)
        return i

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._mutex:
            saved: Tree | None = None
            if self._depth == 0:
                self._load()
                saved = dict(self._nb)  # nothing below the root is ever changed in place
                self._dirty = False
            self._depth += 1
            try:
                yield
            except BaseException:
                self._depth -= 1
                if self._depth == 0:
                    assert saved is not None
                    self._nb = saved
                    self._dirty = False
                raise
            self._depth -= 1
            if self._depth == 0 and self._dirty:
                try:
                    self._commit()
                except BaseException:
                    assert saved is not None
                    self._nb = saved
                    raise
                finally:
                    self._dirty = False
