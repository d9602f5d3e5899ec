"""Cell operations on an in-memory nbformat notebook, shared by the memory and file backends."""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import nbformat
from nbformat import NotebookNode

from planbook.documents.base import (
    Cell,
    MetadataPath,
    apply_metadata_changes,
    index_of,
    new_cell_id,
)
from planbook.errors import UnknownCell


def ensure_ids(nb: NotebookNode) -> bool:
    """Give every cell an id (nbformat 4.5); True when something had to change."""
    changed = False
    if (nb.get("nbformat"), nb.get("nbformat_minor", 0)) < (4, 5):
        nb["nbformat"], nb["nbformat_minor"] = 4, 5
        changed = True
    seen: set[str] = set()
    for cell in nb.cells:
        if not cell.get("id") or cell["id"] in seen:
            cell["id"] = new_cell_id()
            changed = True
        seen.add(cell["id"])
    return changed


def to_cell(node: NotebookNode) -> Cell:
    source = node.get("source", "")
    if isinstance(source, list):
        source = "".join(source)
    return Cell(
        id=node["id"],
        cell_type=node.get("cell_type", "code"),
        source=source,
        metadata=dict(node.get("metadata", {})),
        outputs=[dict(o) for o in node.get("outputs", [])]
        if node.get("cell_type") == "code"
        else [],
        execution_count=node.get("execution_count"),
        attachments=node.get("attachments"),
    )


def to_node(cell: Cell) -> NotebookNode:
    meta: dict[str, Any] = copy.deepcopy(cell.metadata)
    if cell.cell_type == "code":
        node = nbformat.v4.new_code_cell(
            source=cell.source, metadata=meta, execution_count=cell.execution_count
        )
        node["outputs"] = [nbformat.from_dict(copy.deepcopy(o)) for o in cell.outputs]
    elif cell.cell_type == "markdown":
        node = nbformat.v4.new_markdown_cell(source=cell.source, metadata=meta)
    else:
        node = nbformat.v4.new_raw_cell(source=cell.source, metadata=meta)
    if cell.attachments and cell.cell_type != "code":
        node["attachments"] = copy.deepcopy(cell.attachments)
    node["id"] = cell.id
    return node


class NodeNotebook:
    """The NotebookDocument operations over ``self._nb``; subclasses decide where it lives."""

    backend = "memory"
    description = "memory"

    def __init__(self, nb: NotebookNode) -> None:
        ensure_ids(nb)
        self._nb = nb
        self._depth = 0
        self._mutex = threading.RLock()

    # Subclasses refresh from and persist to their storage around the outermost transaction.
    def _load(self) -> None:
        """Bring ``self._nb`` up to date with the storage."""

    def _commit(self) -> None:
        """Persist ``self._nb``."""

    @property
    def notebook(self) -> NotebookNode:
        self._refresh()
        return self._nb

    def _refresh(self) -> None:
        if self._depth == 0:
            self._load()

    def cells(self) -> list[Cell]:
        self._refresh()
        return [to_cell(node) for node in self._nb.cells]

    def get_metadata(self, key: str) -> Any | None:
        """The stored value itself, not a copy: callers treat it as read-only."""
        self._refresh()
        return self._nb.metadata.get(key)

    def set_metadata(self, key: str, value: Any) -> None:
        """Stores ``value`` as given: the caller hands over a fresh object it will not mutate."""
        with self.transaction():
            # NotebookNode.__setitem__ would convert the whole value to NotebookNodes each save
            dict.__setitem__(self._nb.metadata, key, value)

    def update_metadata(self, key: str, changes: Mapping[MetadataPath, Any]) -> None:
        with self.transaction():
            current = self._nb.metadata.get(key)
            if not isinstance(current, dict):
                current = {}
                dict.__setitem__(self._nb.metadata, key, current)
            apply_metadata_changes(current, changes)

    @contextmanager
    def locked(self) -> Iterator[None]:
        """In one process a re-entrant lock; the file backend adds a lock across processes."""
        with self._mutex:
            yield

    def insert_cell(self, index: int, cell: Cell) -> None:
        with self.transaction():
            if index_of(self.cells(), cell.id) is not None:
                raise ValueError(f"a cell with id {cell.id!r} already exists")
            self._nb.cells.insert(max(0, min(index, len(self._nb.cells))), to_node(cell))

    def replace_cell(self, cell: Cell) -> None:
        with self.transaction():
            self._nb.cells[self._index(cell.id)] = to_node(cell)

    def delete_cell(self, cell_id: str) -> None:
        with self.transaction():
            del self._nb.cells[self._index(cell_id)]

    def move_cell(self, cell_id: str, index: int) -> None:
        with self.transaction():
            node = self._nb.cells.pop(self._index(cell_id))
            self._nb.cells.insert(max(0, min(index, len(self._nb.cells))), node)

    def _index(self, cell_id: str) -> int:
        for i, node in enumerate(self._nb.cells):
            if node.get("id") == cell_id:
                return i
        raise UnknownCell(cell_id)

    def _snapshot(self) -> NotebookNode | None:
        """What to go back to when a transaction fails (None: reload from storage)."""
        return copy.deepcopy(self._nb)

    def _restore(self, saved: NotebookNode | None) -> None:
        assert saved is not None
        self._nb = saved

    @contextmanager
    def transaction(self) -> Iterator[None]:
        saved: NotebookNode | None = None
        if self._depth == 0:
            self._load()
            saved = self._snapshot()
        self._depth += 1
        try:
            yield
        except BaseException:
            self._depth -= 1
            if self._depth == 0:
                self._restore(saved)
            raise
        self._depth -= 1
        if self._depth == 0:
            try:
                self._commit()
            except BaseException:
                self._restore(saved)
                raise
