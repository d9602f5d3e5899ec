"""What "retry" means for a failed step: run its code again where the change itself is in place
(a cell step whose run failed, a run_cell, a shell command), else stage the same change again
for review (a step refused before it changed anything, say by drift)."""

from __future__ import annotations

from dataclasses import dataclass

from planbook.documents.base import new_cell_id
from planbook.errors import UsageMistake
from planbook.model.cell import Cell
from planbook.model.operations import AnyOperation, EditCell, InsertCell, RunCell, Shell
from planbook.model.plan import Step
from planbook.model.retries import retry_reason


@dataclass(frozen=True)
class Retry:
    operation: AnyOperation
    #: Run at once (the change is in place, only its code runs again), or stage for review.
    run_now: bool
    reason: str


def retry_of(step: Step, number: int, cells: list[Cell]) -> Retry:
    if step.status != "failed":
        raise UsageMistake(f"step {number} is {step.status}; only a failed step can be retried")
    op = step.operation
    by_id = {c.id: c for c in cells}
    reason = retry_reason(number, step.reason)
    if isinstance(op, InsertCell | EditCell) and step.run_at_approval:
        cell = by_id.get(op.cell_id)
        if cell is not None and cell.source == op.source:
            return Retry(RunCell(cell_id=op.cell_id), True, reason)
    if isinstance(op, RunCell):
        if op.cell_id not in by_id:
            raise UsageMistake(f"cell {op.cell_id!r} of step {number} is gone; nothing to retry")
        return Retry(op, True, reason)
    if isinstance(op, Shell):
        return Retry(op, True, reason)
    if isinstance(op, InsertCell):
        op = op.model_copy(update={"cell_id": new_cell_id()})
    return Retry(op, False, reason)
