"""Turn one operation into document and workspace calls. No checks of approval here."""

from __future__ import annotations

from planbook.documents.base import CellPlace, NotebookDocument
from planbook.engine.checkpoints import Targets, place_hash
from planbook.engine.hashing import ABSENT, bytes_hash
from planbook.engine.projection import apply_text_edits
from planbook.errors import ConflictError, TargetDrifted, UnknownCell
from planbook.model.cell import Cell
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
    WriteFile,
    anchors_of,
)
from planbook.workspace.files import Workspace, decode_text


def targets_of(op: AnyOperation) -> Targets:
    match op:
        case InsertCell() | EditCell() | DeleteCell() | MoveCell() | RunCell():
            return Targets(cells=[op.cell_id])
        case WriteFile() | EditFile() | DeleteFile():
            return Targets(files=[op.path])
        case Shell() | McpCall():
            return Targets()


def current_hash(op: AnyOperation, document: NotebookDocument, workspace: Workspace) -> str:
    match op:
        case InsertCell() | EditCell() | DeleteCell() | MoveCell() | RunCell():
            return place_hash(document.find_cell(op.cell_id))
        case WriteFile() | EditFile() | DeleteFile():
            return bytes_hash(workspace.read_bytes(op.path))
        case Shell() | McpCall():
            return ABSENT


def check_drift(
    op: AnyOperation, base: str, document: NotebookDocument, workspace: Workspace
) -> None:
    """Refuse with `ConflictError` when the target is not as it was when the step was staged."""
    now = current_hash(op, document, workspace)
    if now != base:
        if isinstance(op, InsertCell):
            what = f"a cell with id {op.cell_id!r} already exists"
        elif base == ABSENT:
            what = f"{_name(op)} exists now but did not when the step was staged"
        elif now == ABSENT:
            what = f"{_name(op)} no longer exists"
        else:
            what = f"{_name(op)} changed after the step was staged"
        raise TargetDrifted(what)
    for anchor in anchors_of(op):
        if document.find_cell(anchor) is None:
            raise TargetDrifted(f"anchor cell {anchor!r} no longer exists")


def _name(op: AnyOperation) -> str:
    if isinstance(op, WriteFile | EditFile | DeleteFile):
        return f"file {op.path!r}"
    return f"cell {getattr(op, 'cell_id', '?')!r}"


def apply_cell_op(
    document: NotebookDocument, op: InsertCell | EditCell | DeleteCell | MoveCell
) -> None:
    """Each target and anchor is looked up by id (``find_cell``): the cost of a step does not
    grow with the notebook."""
    match op:
        case InsertCell():
            if op.after is not None:
                at = _place(document, op.after).index + 1
            elif op.before is not None:
                at = _place(document, op.before).index
            else:
                at = len(document.cells())
            document.insert_cell(at, Cell(id=op.cell_id, cell_type=op.cell_type, source=op.source))
        case EditCell():
            cell = _place(document, op.cell_id).cell
            document.replace_cell(cell.model_copy(update={"source": op.source}))
        case DeleteCell():
            document.delete_cell(op.cell_id)
        case MoveCell():
            moved = _place(document, op.cell_id).index
            if op.after is None:
                at = 0
            elif op.after == op.cell_id:  # not among the other cells
                raise UnknownCell(op.after)
            else:  # its index among the other cells, the moved one taken out
                anchor = _place(document, op.after).index
                at = anchor + (0 if moved < anchor else 1)
            document.move_cell(op.cell_id, at)


def new_file_bytes(op: WriteFile | EditFile | DeleteFile, workspace: Workspace) -> bytes | None:
    """The file's content after ``op`` (None: deleted), computed before anything is written."""
    match op:
        case WriteFile():
            return op.content.encode()
        case EditFile():
            data = workspace.read_bytes(op.path)
            if data is None:
                raise ConflictError(f"file {op.path!r} no longer exists; nothing was applied")
            return apply_text_edits(decode_text(data, op.path), op.edits, op.path).encode()
        case DeleteFile():
            return None


def write_file_bytes(workspace: Workspace, path: str, data: bytes | None) -> None:
    if data is None:
        workspace.delete(path)
    else:
        workspace.write_bytes(path, data)


def _place(document: NotebookDocument, cell_id: str) -> CellPlace:
    found = document.find_cell(cell_id)
    if found is None:
        raise UnknownCell(cell_id)
    return found
