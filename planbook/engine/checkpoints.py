"""Write checkpoints before a change and restore them on rollback.

A checkpoint holds, for each target, only what its step changes: for a cell the parts that
differ after the change (the old source for an edit, the old outputs and count for a run, the
whole cell for a delete, nothing but the position for a move) and its place only when the
change moved it (or deleted it), for a file its bytes and mode.
Every output item and every file's bytes are content-addressed blobs, stored once however
many checkpoints name them; the other parts are kept in the checkpoint itself, compressed when
long (an old source is seldom shared). Rolling back restores those parts newest first.
Rollback is itself a checkpoint, so it can be undone the same way. Schema 1 checkpoints (a
blob of the whole cell) are still restored.
"""

from __future__ import annotations

import json
from typing import Any

from planbook.documents.base import CellPlace, NotebookDocument, index_of
from planbook.documents.deep_json import refuse_kept
from planbook.engine.blobs import BlobStore, decode_blob, encode_smallest
from planbook.engine.hashing import ABSENT, bytes_hash, cell_hash
from planbook.model.cell import Cell
from planbook.model.checkpoint import CellSnapshot, Checkpoint, FileSnapshot
from planbook.workspace.files import Workspace
from planbook.workspace.layer_apply import Prior, entry_hash, prior_state, restore_entry

#: Parts whose JSON is at most this long are kept in the checkpoint itself, not as a blob
#: (a blob's key costs 64 characters, and text this short hardly compresses).
INLINE_LIMIT = 256
_CELL_PARTS = ("cell_type", "source", "metadata", "outputs", "execution_count", "attachments")


class Targets:
    """The cell ids and file paths a change touches."""

    def __init__(self, cells: list[str] | None = None, files: list[str] | None = None) -> None:
        self.cells = list(dict.fromkeys(cells or []))
        self.files = list(dict.fromkeys(files or []))


def next_seq(checkpoints: list[Checkpoint]) -> int:
    """The seq of the next checkpoint. The list is in seq order (each is appended with the
    next seq, and a load sorts them: ``store.parse_state``), so the last one has the highest:
    a look at every checkpoint before each step would cost more as the history grows."""
    return checkpoints[-1].seq + 1 if checkpoints else 1


def cell_state_hash(cells: list[Cell], cell_id: str) -> str:
    i = index_of(cells, cell_id)
    return ABSENT if i is None else cell_hash(cells[i].cell_type, cells[i].source)


def place_hash(found: CellPlace | None) -> str:
    """``cell_state_hash`` of a cell looked up by id (``NotebookDocument.find_cell``)."""
    return ABSENT if found is None else cell_hash(found.cell.cell_type, found.cell.source)


def _json(value: Any) -> str:
    # Key order kept (not sorted): a restored value is written back in its own order.
    # A part kept as its text (nested too deep to hold, documents/deep_json.py) is refused.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=refuse_kept)


class CheckpointWriter:
    def __init__(self, document: NotebookDocument, workspace: Workspace, blobs: BlobStore) -> None:
        self.document = document
        self.workspace = workspace
        self.blobs = blobs
        #: cell id -> (the cell and its place before the change, whether its outputs are part
        #: of the change)
        self._before: dict[str, tuple[CellPlace, bool]] = {}
        #: id(snapshot) -> what it holds, read before a rollback writes anything (``preload``)
        self._loaded: dict[int, tuple[CellSnapshot | FileSnapshot, Any]] = {}

    def preload(self, snaps: list[CellSnapshot | FileSnapshot]) -> None:
        """Read (inflate and check) everything ``snaps`` hold before anything is restored: a
        blob that is missing, corrupted or a compression bomb then refuses the whole rollback
        in one line with nothing written, not half of it after some files were."""
        self._loaded = {}
        for snap in snaps:
            if isinstance(snap, CellSnapshot):
                if snap.exists:
                    self._loaded[id(snap)] = (snap, old_fields(self.blobs, snap))
            elif snap.exists and snap.blob is not None:
                self._loaded[id(snap)] = (snap, self.blobs.get(snap.blob))

    def _preloaded(self, snap: CellSnapshot | FileSnapshot) -> Any:
        hit = self._loaded.get(id(snap))
        return hit[1] if hit is not None and hit[0] is snap else None

    def snapshot_cells(self, cell_ids: list[str], *, outputs: bool = False) -> list[CellSnapshot]:
        """Where each cell stands before the change. What it holds is recorded by
        ``with_after_hashes``, once the change shows which parts differ; ``outputs``: the
        change will replace the outputs (a run), so keep them whatever they are then."""
        out = []
        for cell_id in cell_ids:  # by id: a step's cost does not grow with the notebook
            found = self.document.find_cell(cell_id)
            if found is None:
                out.append(CellSnapshot(cell_id=cell_id, exists=False))
                continue
            self._before[cell_id] = (found, outputs)
            out.append(
                CellSnapshot(
                    cell_id=cell_id, exists=True, index=found.index, after=found.above, parts={}
                )
            )
        return out

    def snapshot_files(self, paths: list[str]) -> list[FileSnapshot]:
        out = []
        for path in paths:
            data = self.workspace.read_bytes(path)
            if data is None:
                out.append(FileSnapshot(path=path, exists=False))
                continue
            mode = self.workspace.resolve(path).stat().st_mode & 0o7777
            out.append(FileSnapshot(path=path, exists=True, blob=self.blobs.put(data), mode=mode))
        return out

    def snapshot_entries(self, priors: list[Prior]) -> list[FileSnapshot]:
        """What a shell step's layer is about to change (workspace/layer_apply.py), in its
        order (parents first): files, folders and symlinks, with kind and mode."""
        out = []
        for prior in priors:
            if prior.too_big:
                continue  # named by the caller: rollback cannot put it back
            blob = None if prior.data is None else self.blobs.put(prior.data)
            out.append(
                FileSnapshot(
                    path=prior.path,
                    exists=prior.exists,
                    blob=blob,
                    mode=prior.mode,
                    kind=prior.entry or "file",
                )
            )
        return out

    def snapshot_paths(self, snaps: list[FileSnapshot]) -> list[FileSnapshot]:
        """Where each of ``snaps``'s paths stands now, the same way they were taken."""
        plain = self.snapshot_files([s.path for s in snaps if s.kind is None])
        entries = [s for s in snaps if s.kind is not None]
        entries.sort(key=lambda s: s.path)
        priors = prior_state(
            self.workspace.root, [s.path for s in entries], self.workspace.max_bytes
        )
        return [*plain, *self.snapshot_entries(priors)]

    def with_after_hashes(self, checkpoint: Checkpoint, *, unchanged: bool = False) -> None:
        """Record what each cell held that the change replaced, and what each target looks
        like right after the change (for rollback drift). ``unchanged``: nothing was applied
        to the cells since ``snapshot_cells``, in the same transaction (a step that only runs
        a cell changes it later, with its outputs): the places it read are reused, not
        looked up again."""
        snaps = []
        for snap in checkpoint.cells:
            before = self._before.pop(snap.cell_id, None)
            if unchanged and (before is not None or not snap.exists):
                found = None if before is None else before[0]
            else:
                found = self.document.find_cell(snap.cell_id)
            update: dict[str, Any] = {"after_hash": place_hash(found)}
            if snap.exists and snap.blob is None and before is not None:
                update["parts"] = self._parts(
                    before[0].cell, None if found is None else found.cell, before[1]
                )
                if found is not None and snap.after is not None and found.above == snap.after:
                    update["after"] = None  # not moved: its number (index) is kept for names
            snaps.append(snap.model_copy(update=update))
        checkpoint.cells = snaps
        checkpoint.files = [
            s.model_copy(update={"after_hash": self.current_hash(s)}) for s in checkpoint.files
        ]

    def _parts(self, before: Cell, after: Cell | None, outputs: bool) -> dict[str, dict[str, Any]]:
        parts: dict[str, dict[str, Any]] = {}
        for name in _CELL_PARTS:
            value = getattr(before, name)
            changed = after is None or getattr(after, name) != value
            if name in ("outputs", "execution_count") and outputs and before.cell_type == "code":
                changed = True
            if not changed:
                continue
            if name == "outputs":
                parts[name] = {"items": [self.blobs.put(_json(o).encode()) for o in value]}
                continue
            text = _json(value)
            if len(text) <= INLINE_LIMIT:
                parts[name] = {"json": text}
            else:  # compressed in place: an old source is seldom shared, a blob key costs 128
                parts[name] = {"z": encode_smallest(text.encode())}
        return parts

    def old_fields(self, snap: CellSnapshot) -> dict[str, Any]:
        loaded = self._preloaded(snap)
        return dict(loaded) if loaded is not None else old_fields(self.blobs, snap)

    def file_hash(self, path: str) -> str:
        return bytes_hash(self.workspace.read_bytes(path))

    def current_hash(self, target: CellSnapshot | FileSnapshot) -> str:
        if isinstance(target, CellSnapshot):
            return place_hash(self.document.find_cell(target.cell_id))
        if target.kind is not None:
            return entry_hash(self.workspace.root, target.path)
        return self.file_hash(target.path)

    def restore_cell(self, snap: CellSnapshot) -> None:
        """Put one cell back as it was (call inside a document transaction)."""
        cells = self.document.cells()
        present = index_of(cells, snap.cell_id)
        if not snap.exists:
            if present is not None:
                self.document.delete_cell(snap.cell_id)
            return
        fields = self.old_fields(snap)
        if present is None:
            fields["id"] = snap.cell_id
            self.document.insert_cell(self._position(cells, snap), Cell.model_validate(fields))
            return
        current = cells[present]
        if fields:
            fields.pop("id", None)
            self.document.replace_cell(
                Cell.model_validate({**current.model_dump(), **fields, "id": snap.cell_id})
            )
        if not has_position(snap):
            return  # the step left the cell where it was
        cells = self.document.cells()
        without = [c for c in cells if c.id != snap.cell_id]
        target = self._position(without, snap)
        if index_of(cells, snap.cell_id) != target:
            self.document.move_cell(snap.cell_id, target)

    @staticmethod
    def _position(cells: list[Cell], snap: CellSnapshot) -> int:
        """Where the cell goes among ``cells`` (which do not include it)."""
        if snap.after is not None:
            anchor = index_of(cells, snap.after)
            if anchor is not None:
                return anchor + 1
        return min(snap.index or 0, len(cells))

    def restore_file(self, snap: FileSnapshot) -> None:
        if snap.kind is not None:  # a shell step's layer: any kind, any size, mode and all
            data = None if snap.blob is None else self.blobs.get(snap.blob)
            prior = Prior(snap.path, snap.exists, snap.kind, snap.mode, data)
            restore_entry(self.workspace.root, prior)
            return
        if not snap.exists:
            self.workspace.delete(snap.path)
            return
        assert snap.blob is not None
        loaded = self._preloaded(snap)
        data = loaded if isinstance(loaded, bytes) else self.blobs.get(snap.blob)
        self.workspace.write_bytes(snap.path, data)
        if snap.mode is not None:
            self.workspace.check_writable(snap.path).chmod(snap.mode)


def has_position(snap: CellSnapshot) -> bool:
    """Whether rolling back puts the cell back in its place: a step that moved or deleted it
    records the cell above it (``after``; none for the top cell, at index 0). A snapshot with
    only an index (an edit, a run) left the cell where it was; every snapshot written before
    this distinction has ``after`` wherever its index is not 0, so it reads the same."""
    return snap.after is not None or not snap.index


def old_fields(blobs: BlobStore, snap: CellSnapshot) -> dict[str, Any]:
    """The cell fields a snapshot holds (all of them for a schema 1 snapshot)."""
    if snap.blob is not None:
        return dict(json.loads(blobs.get(snap.blob)))
    fields: dict[str, Any] = {}
    for name, part in (snap.parts or {}).items():
        if "items" in part:
            fields[name] = [json.loads(blobs.get(key)) for key in part["items"]]
        elif "blob" in part:
            fields[name] = json.loads(blobs.get(part["blob"]))
        elif "z" in part:
            fields[name] = json.loads(decode_blob(part["z"], f"the old {name} of {snap.cell_id!r}"))
        else:
            fields[name] = json.loads(part["json"])
    return fields


def source_before(blobs: BlobStore, snap: CellSnapshot) -> str | None:
    """The source a cell had before its step, when its checkpoint holds it (an edit, a delete)."""
    source = old_fields(blobs, snap).get("source")
    return source if isinstance(source, str) else None
