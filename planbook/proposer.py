"""``session.propose.*``: the Python API for proposing changes. Each call becomes one operation,
validated by pydantic, and goes through the session's policy (staged in plan mode)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from planbook.documents.base import new_cell_id
from planbook.errors import UsageMistake, first_problem
from planbook.model.operations import (
    AnyOperation,
    CellType,
    DeleteCell,
    DeleteFile,
    EditCell,
    EditFile,
    InsertCell,
    MoveCell,
    RunCell,
    Shell,
    TextEdit,
    WriteFile,
)
from planbook.model.plan import Step

if TYPE_CHECKING:
    from planbook.session import Session


def build(cls: type[AnyOperation], **fields: Any) -> AnyOperation:
    """Validate operation arguments: a bad one is a one-line `UsageMistake`, never a step."""
    try:
        return cls(**fields)
    except ValidationError as exc:
        where, problem = first_problem(exc, whole=cls.__name__)
        raise UsageMistake(f"invalid {cls.__name__} argument `{where}`: {problem}") from None


class Proposer:
    def __init__(self, session: Session) -> None:
        self._session = session

    def _path(self, path: str) -> str:
        return self._session.workspace.relative(path)

    def _stage(self, op: AnyOperation, reason: str, run: bool = False) -> Step:
        return self._session.stage(op, reason=reason, run=run)

    def insert_cell(
        self,
        source: str,
        *,
        after: str | None = None,
        before: str | None = None,
        cell_type: CellType = "code",
        reason: str = "",
        run: bool = False,
    ) -> Step:
        """Propose a new cell after/before the cell with that id (at the end with neither)."""
        op = build(
            InsertCell,
            cell_id=new_cell_id(),
            source=source,
            cell_type=cell_type,
            after=after,
            before=before,
        )
        return self._stage(op, reason, run)

    def edit_cell(self, cell_id: str, source: str, *, reason: str = "", run: bool = False) -> Step:
        """Propose ``source`` as the new source of cell ``cell_id``."""
        return self._stage(build(EditCell, cell_id=cell_id, source=source), reason, run)

    def delete_cell(self, cell_id: str, *, reason: str = "") -> Step:
        return self._stage(build(DeleteCell, cell_id=cell_id), reason)

    def move_cell(self, cell_id: str, *, after: str | None, reason: str = "") -> Step:
        """Propose moving a cell after another one (``after=None``: to the top)."""
        return self._stage(build(MoveCell, cell_id=cell_id, after=after), reason)

    def run_cell(self, cell_id: str, *, reason: str = "") -> Step:
        return self._stage(build(RunCell, cell_id=cell_id), reason)

    def write_file(self, path: str, content: str, *, reason: str = "") -> Step:
        return self._stage(build(WriteFile, path=self._path(path), content=content), reason)

    def edit_file(
        self, path: str, edits: Sequence[Mapping[str, str] | TextEdit], *, reason: str = ""
    ) -> Step:
        """Propose search/replace edits: ``[{"search": old, "replace": new}, ...]``."""
        if isinstance(edits, (Mapping, str)):
            raise UsageMistake('`edits` is a list of {"search": ..., "replace": ...} objects')
        return self._stage(build(EditFile, path=self._path(path), edits=tuple(edits)), reason)

    def delete_file(self, path: str, *, reason: str = "") -> Step:
        return self._stage(build(DeleteFile, path=self._path(path)), reason)

    def shell(self, command: str, *, reason: str = "", timeout: float = 60.0) -> Step:
        return self._stage(build(Shell, command=command, timeout=timeout), reason)
