"""The room's shared document read as planbook's ``Cell``s and JSON metadata, cached until it
changes.

The engine reads the cells and the plan several times per step; converting the shared document
is O(notebook) for the cells and O(plan) for the metadata. So the cells are converted once per
change of them, and only the cells changed in place since (someone typing in one cell, a
running cell's outputs); each metadata entry once per change of the metadata. The cached values
are shared: callers treat them as read-only (as with the file backend).
"""

from __future__ import annotations

from typing import Any

from planbook.documents.collector import collector_paused
from planbook.documents.live.convert import json_ints, to_cell
from planbook.documents.live.room import Room
from planbook.model.cell import Cell


class SharedReads:
    """The cached reads of one room's document."""

    def __init__(self, room: Room) -> None:
        self._room = room
        #: The converted cells with the room's cells_version they were read at (the list is
        #: never mutated: a change replaces it).
        self._cache: tuple[int, list[Cell]] | None = None
        #: The ids of the cached cells list (that list object, which is never mutated).
        self._ids: tuple[list[Cell], list[str]] | None = None
        #: metadata[key] as JSON, per key, with the room's meta_version it was read at: the
        #: plan is read at every step, and converting the shared maps back is O(plan)
        self._meta_cache: dict[str, tuple[int, Any]] = {}

    def metadata(self, key: str) -> Any | None:
        """``metadata[key]`` as JSON, whether it is one value (a whole-value write, from an
        older planbook or JupyterLab's metadata editor) or shared maps written by part.

        The value is cached until the metadata changes, and shared: callers treat it as
        read-only (as with the file backend)."""
        room = self._room
        with room.cond:
            room.wait_loaded()
            hit = self._meta_cache.get(key)
            if hit is not None and hit[0] == room.meta_version:
                return hit[1]
            with collector_paused():  # it reads the document (documents/collector.py)
                meta = room.meta.get("metadata")
                value = None if meta is None else meta.get(key)
                if value is not None:
                    value = json_ints(value.to_py() if hasattr(value, "to_py") else value)
            self._meta_cache[key] = (room.meta_version, value)
            return value

    def cells(self) -> list[Cell]:
        """The shared cells as ``Cell``s (shared: read-only for the caller)."""
        room = self._room
        with room.cond:
            room.wait_loaded()
            if self._cache is None or self._cache[0] != room.cells_version:
                with collector_paused():  # it reads the document (documents/collector.py)
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
                cells[i] = to_cell(room.cells[i].to_py() or {})
            return cells
        return [to_cell(c) for c in room.cells.to_py() or []]

    def ids_of(self, cells: list[Cell]) -> list[str]:
        """The ids of ``cells``, a list of the cache (never mutated): computed once per list.
        Read-only for the caller."""
        known = self._ids
        if known is not None and known[0] is cells:
            return known[1]
        ids = [c.id for c in cells]
        self._ids = (cells, ids)
        return ids

    def cell_ids(self) -> list[str]:
        """The ids of the shared cells in order (call holding the room's ``cond``): from the
        cached cells when they are current, since reading each shared cell is O(notebook)."""
        cache = self._cache
        if cache is not None and cache[0] == self._room.cells_version:
            return list(self.ids_of(cache[1]))
        with collector_paused():  # it reads the document (documents/collector.py)
            return [str(c.get("id")) for c in self._room.cells]

    def forget_cells(self) -> None:
        """Convert the cells again at the next read."""
        self._cache = None

    def remember_cells(self, cells: list[Cell], ids: list[str]) -> None:
        """``cells`` are what the shared document holds now (a commit's own result), ``ids``
        their ids (kept as ``ids_of(cells)``: not gathered again from 500 cells a commit)."""
        self._cache = (self._room.cells_version, cells)
        self._ids = (cells, ids)

    def remember_metadata(self, values: dict[str, Any]) -> None:
        """metadata[key] holds ``values[key]`` now, for each key (a commit wrote them)."""
        for key, value in values.items():
            self._meta_cache[key] = (self._room.meta_version, value)
