"""How much could go wrong: a risk level derived from the operation, never chosen by the agent."""

from __future__ import annotations

from planbook.engine.projection import Projection
from planbook.engine.rules.classifier import is_read_only
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
)
from planbook.model.plan import Risk


def shell_is_read_only(command: str) -> bool:
    return is_read_only(command)


def risk_of(op: AnyOperation, proj: Projection) -> Risk:
    match op:
        case InsertCell() | MoveCell():
            return "low"
        case EditCell() | RunCell() | EditFile():
            return "medium"
        case WriteFile():
            return "low" if proj.file_text(op.path) is None else "medium"
        case DeleteCell() | DeleteFile():
            return "high"
        case Shell():
            return "low" if shell_is_read_only(op.command) else "high"
        case McpCall():
            return "high"  # it acts outside planbook: no checkpoint can undo it
