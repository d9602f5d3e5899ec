"""Write checkpoints before a change and restore them on rollback.

A checkpoint holds, for each target, its prior state as a blob (cell JSON or file bytes) plus
where a cell stood; rolling back restores those states newest first. Rollback is itself a
checkpoint, so it can be undone the same way.
"""

from __future__ import annotations

import json

from planbook.documents.base import Cell, NotebookDocument, index_of
from planbook.engine.blobs import BlobStore
from planbook.engine.hashing import ABSENT, bytes_hash, canonical_json, cell_hash
from planbook.model.checkpoint import CellSnapshot, Checkpoint, FileSnapshot
from planbook.workspace import Workspace


class Targets:
    """The cell ids and file paths a change touches."""

    def __init__(self, cells: list[str] | None = None, files: list[str] | None = None) -> None:
        self.cells = list(dict.fromkeys(cells or []))
        self.files = list(dict.fromkeys(files or []))


def cell_state_hash(cells: list[Cell], cell_id: str) -> str:
    i = index_of(cells, cell_id)
    return ABSENT if i is None else cell_hash(cells[i].cell_type, cells[i].source)


class CheckpointWriter:
    def __init__(self, document: NotebookDocument, workspace: Workspace, blobs: BlobStore) -> None:
        self.document = document
        self.workspace = workspace
        self.blobs = blobs

    def snapshot_cells(self, cell_ids: list[str]) -> list[CellSnapshot]:
        cells = self.document.cells()
        out = []
        for cell_id in cell_ids:
            i = index_of(cells, cell_id)
            if i is None:
                out.append(CellSnapshot(cell_id=cell_id, exists=False))
                continue
            blob = self.blobs.put(canonical_json(cells[i].model_dump(mode="json")))
            after = cells[i - 1].id if i > 0 else None
            out.append(CellSnapshot(cell_id=cell_id, exists=True, blob=blob, index=i, after=after))
        return out

    def snapshot_files(self, paths: list[str]) -> list[FileSnapshot]:
        out = []
        for path in paths:
            data = self.workspace.read_bytes(path)
            blob = None if data is None else self.blobs.put(data)
            out.append(FileSnapshot(path=path, exists=data is not None, blob=blob))
        return out

    def with_after_hashes(self, checkpoint: Checkpoint) -> None:
        """Record what each target looks like right after the change (for rollback drift)."""
        cells = self.document.cells()
        checkpoint.cells = [
            s.model_copy(update={"after_hash": cell_state_hash(cells, s.cell_id)})
            for s in checkpoint.cells
        ]
        checkpoint.files = [
            s.model_copy(update={"after_hash": self.file_hash(s.path)}) for s in checkpoint.files
        ]

    def file_hash(self, path: str) -> str:
        return bytes_hash(self.workspace.read_bytes(path))

    def current_hash(self, target: CellSnapshot | FileSnapshot) -> str:
        if isinstance(target, CellSnapshot):
            return cell_state_hash(self.document.cells(), target.cell_id)
        return self.file_hash(target.path)

    def restore_cell(self, snap: CellSnapshot) -> None:
        """Put one cell back as it was (call inside a document transaction)."""
        cells = self.document.cells()
        present = index_of(cells, snap.cell_id)
        if not snap.exists:
            if present is not None:
                self.document.delete_cell(snap.cell_id)
            return
        assert snap.blob is not None
        cell = Cell.model_validate(json.loads(self.blobs.get(snap.blob)))
        if present is None:
            self.document.insert_cell(self._position(cells, snap), cell)
            return
        self.document.replace_cell(cell)
        cells = self.document.cells()
        without = [c for c in cells if c.id != snap.cell_id]
        target = self._position(without, snap)
        if index_of(cells, snap.cell_id) != target:
            self.document.move_cell(snap.cell_id, target)

    @staticmethod
    def _position(cells: list[Cell], snap: CellSnapshot) -> int:
        """Where the cell goes among ``cells`` (which do not include it)."""
        if snap.after is None:
            return 0
        anchor = index_of(cells, snap.after)
        if anchor is not None:
            return anchor + 1
        return min(snap.index or 0, len(cells))

    def restore_file(self, snap: FileSnapshot) -> None:
        if not snap.exists:
            self.workspace.delete(snap.path)
            return
        assert snap.blob is not None
        self.workspace.write_bytes(snap.path, self.blobs.get(snap.blob))
