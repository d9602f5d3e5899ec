"""What the notebook and files would look like once the open steps ran.

Staging validates a new operation against this projection (so a step may build on an earlier
staged one: run a cell that step 1 inserts, edit a file that step 2 creates), and records the
hash of its target here as the step's ``base``. Diffs are computed from it too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from planbook.engine.hashing import ABSENT, cell_hash, sha256
from planbook.errors import UnknownCell, UnreadableFile, UsageMistake
from planbook.model.cell import CellText
from planbook.model.operations import (
    AnyOperation,
    DeleteCell,
    DeleteFile,
    EditCell,
    EditFile,
    InsertCell,
    McpCall,
    MoveCell,
    RunCell,
    Shell,
    TextEdit,
    WriteFile,
    target_of,
)
from planbook.workspace.files import Workspace


@dataclass(eq=False)  # found by identity: a plan of 10,000 steps compares cells often
class ProjectedCell:
    id: str
    cell_type: str
    source: str


def apply_text_edits(text: str, edits: tuple[TextEdit, ...], path: str) -> str:
    for number, edit in enumerate(edits, start=1):
        count = text.count(edit.search)
        if count != 1:
            found = "is not in" if count == 0 else f"occurs {count} times in"
            raise UsageMistake(
                f"edit {number} for {path!r}: the search text {found} the file; "
                "give a search text that occurs exactly once"
            )
        text = text.replace(edit.search, edit.replace, 1)
    return text


class Projection:
    """Cells are found by id in a map, and their positions are renumbered only from the first
    place a change may have shifted (``_valid``): replaying a plan of n steps costs about n
    look-ups, not n scans of the notebook (a 10,000-step plan took minutes to check)."""

    def __init__(self, cells: Sequence[CellText], workspace: Workspace | None) -> None:
        self.cells = [ProjectedCell(c.id, c.cell_type, c.source) for c in cells]
        #: cell id -> the first cell with that id, and its position while below ``_valid``
        self._by_id: dict[str, ProjectedCell] = {}
        for cell in self.cells:
            self._by_id.setdefault(cell.id, cell)
        self._at_index: dict[str, int] = {}
        self._valid = 0
        self.workspace = workspace
        self._files: dict[str, str | None] = {}
        #: paths whose text in ``_files`` a step gave (the others were read from disk)
        self._applied: set[str] = set()
        #: target key -> id of the last open step that touched it
        self.touched_by: dict[str, str] = {}
        #: cell id -> id of the open step that inserts that cell
        self.created_by: dict[str, str] = {}

    # --- reading -----------------------------------------------------------------------------
    def index(self, cell_id: str) -> int | None:
        cell = self._by_id.get(cell_id)
        if cell is None:
            return None
        i = self._at_index.get(cell_id)
        if i is not None and i < len(self.cells) and self.cells[i] is cell:
            return i
        for j in range(self._valid, len(self.cells)):  # renumber what may have shifted
            other = self.cells[j]
            if self._by_id.get(other.id) is other:
                self._at_index[other.id] = j
        self._valid = len(self.cells)
        return self._at_index[cell_id]

    def cell(self, cell_id: str) -> ProjectedCell:
        cell = self._by_id.get(cell_id)
        if cell is None:
            raise UnknownCell(cell_id)
        return cell

    def _shifted(self, at: int) -> None:
        """Positions from ``at`` on may have changed (an insert, a delete, a move)."""
        self._valid = min(self._valid, at)

    def _insert(self, at: int, cell: ProjectedCell) -> None:
        self.cells.insert(at, cell)
        self._shifted(at)
        first = self._by_id.setdefault(cell.id, cell)
        if first is not cell:  # a notebook with two cells of one id: the upper one counts
            self._by_id[cell.id] = next(c for c in self.cells if c.id == cell.id)

    def _remove(self, at: int) -> ProjectedCell:
        cell = self.cells.pop(at)
        self._shifted(at)
        if self._by_id.get(cell.id) is cell:  # another cell with that id (if any) takes over
            del self._by_id[cell.id]
            twin = next((c for c in self.cells if c.id == cell.id), None)
            if twin is not None:
                self._by_id[cell.id] = twin
                self._at_index.pop(cell.id, None)
                self._valid = 0
        return cell

    def _at(self, cell_id: str) -> int:
        i = self.index(cell_id)
        if i is None:
            raise UnknownCell(cell_id)
        return i

    def forget_reads(self) -> None:
        """Read files from disk again when next asked: they may have changed since."""
        self._files = {p: t for p, t in self._files.items() if p in self._applied}

    def file_text(self, path: str) -> str | None:
        if path not in self._files:
            if self.workspace is None:
                raise UsageMistake("this session has no workspace for file steps")
            self._files[path] = self.workspace.read_text(path)
        return self._files[path]

    def target_hash(self, op: AnyOperation) -> str:
        match op:
            case InsertCell():
                return ABSENT
            case EditCell() | DeleteCell() | MoveCell() | RunCell():
                cell = self.cell(op.cell_id)
                return cell_hash(cell.cell_type, cell.source)
            case WriteFile() | EditFile() | DeleteFile():
                text = self.file_text(op.path)
                return ABSENT if text is None else sha256(text.encode())
            case Shell() | McpCall():
                return ABSENT

    def before_after(self, op: AnyOperation) -> tuple[str, str]:
        """The target's text before and after ``op`` (empty text for absent)."""
        match op:
            case InsertCell():
                return "", op.source
            case EditCell():
                return self.cell(op.cell_id).source, op.source
            case DeleteCell():
                return self.cell(op.cell_id).source, ""
            case MoveCell() | RunCell():
                source = self.cell(op.cell_id).source
                return source, source
            case WriteFile():
                return self.file_text(op.path) or "", op.content
            case EditFile():
                before = self.file_text(op.path) or ""
                return before, apply_text_edits(before, op.edits, op.path)
            case DeleteFile():
                return self.file_text(op.path) or "", ""
            case Shell() | McpCall():
                return "", ""

    # --- checking and applying ----------------------------------------------------------------
    def check(self, op: AnyOperation) -> None:
        """Raise a clear error when ``op`` cannot apply to the projected state."""
        match op:
            case InsertCell():
                if self.index(op.cell_id) is not None:
                    raise UsageMistake(f"a cell with id {op.cell_id!r} already exists")
                for anchor in (op.after, op.before):
                    if anchor is not None:
                        self.cell(anchor)
            case EditCell() | DeleteCell():
                self.cell(op.cell_id)
            case MoveCell():
                self.cell(op.cell_id)
                if op.after is not None:
                    self.cell(op.after)
                    if op.after == op.cell_id:
                        raise UsageMistake("a cell cannot be moved after itself")
            case RunCell():
                if self.cell(op.cell_id).cell_type != "code":
                    raise UsageMistake(
                        f"cell {op.cell_id!r} is a {self.cell(op.cell_id).cell_type} cell; "
                        "only code cells can run"
                    )
            case WriteFile():
                self._check_size(op.path, op.content)
                self.file_text(op.path)
            case EditFile():
                self._check_writable(op.path)
                if self.file_text(op.path) is None:
                    raise UsageMistake(
                        f"{op.path!r} does not exist; propose write_file to create it"
                    )
                self._check_size(op.path, self.before_after(op)[1])
            case DeleteFile():
                self._check_writable(op.path)
                if self.file_text(op.path) is None:
                    raise UsageMistake(f"{op.path!r} does not exist, so it cannot be deleted")
            case Shell() | McpCall():
                pass

    def _check_writable(self, path: str) -> None:
        if self.workspace is not None:
            self.workspace.check_writable(path)

    def _check_size(self, path: str, content: str) -> None:
        """Refuse at staging what the workspace would refuse to write at execution."""
        if self.workspace is not None:
            self.workspace.check_writable(path)
            size = len(content.encode())
            if size > self.workspace.max_bytes:
                raise UnreadableFile(
                    f"refused: the new content of {path!r} is {size:,} bytes, over the "
                    f"{self.workspace.max_bytes:,}-byte limit"
                )

    def apply(self, op: AnyOperation, step_id: str | None = None) -> None:
        match op:
            case InsertCell():
                new = ProjectedCell(op.cell_id, op.cell_type, op.source)
                # An anchor that is gone (rolled back, deleted) is UnknownCell, like any target.
                if op.after is not None:
                    self._insert(self._at(op.after) + 1, new)
                elif op.before is not None:
                    self._insert(self._at(op.before), new)
                else:
                    self._insert(len(self.cells), new)
            case EditCell():
                self.cell(op.cell_id).source = op.source
            case DeleteCell():
                # a target that is gone (rolled back since it was staged) is UnknownCell too
                self._remove(self._at(op.cell_id))
            case MoveCell():
                if op.after is not None:
                    self._at(op.after)  # gone: UnknownCell before anything moves
                moving = self._remove(self._at(op.cell_id))
                at = 0 if op.after is None else self._at(op.after) + 1
                self._insert(at, moving)
            case WriteFile():
                self._files[op.path] = op.content
                self._applied.add(op.path)
            case EditFile():
                self._files[op.path] = self.before_after(op)[1]
                self._applied.add(op.path)
            case DeleteFile():
                self._files[op.path] = None
                self._applied.add(op.path)
            case RunCell() | Shell() | McpCall():
                pass
        if step_id is not None:
            self.touched_by[target_of(op)] = step_id
            if isinstance(op, InsertCell):
                self.created_by[op.cell_id] = step_id
