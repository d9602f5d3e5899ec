"""A proposal the plan already holds: re-running the cell that proposed it (``%%propose``,
``pb.propose.delete_cell(...)``) finds the open step that makes exactly this change and gives
it back instead of staging it twice, or, when an open step deletes the target cell, says so
in one line instead of "no such cell" about a cell still on screen.

"The same change": the same operation (kind, target and content) with the same run flag; for a
new cell, the same source and type at the same place (new cells get a new id each time, and a
second insert after one cell is placed after the first one, engine ``_keep_plan_order``)."""

from __future__ import annotations

from planbook.engine import planning
from planbook.engine.projection import Projection
from planbook.errors import UsageMistake
from planbook.model.operations import AnyOperation, DeleteCell, InsertCell, MoveCell
from planbook.model.plan import Plan, Step


def open_steps(plan: Plan | None) -> list[tuple[int, Step]]:
    """The open steps of ``plan`` with their numbers (as ``%plan`` shows them)."""
    if plan is None:
        return []
    return [(n, s) for n, s in enumerate(plan.steps, start=1) if s.status in planning.PROJECTED]


def same_step(plan: Plan | None, op: AnyOperation, run: bool) -> tuple[int, Step] | None:
    """The open step that makes exactly ``op`` (not an insert: see ``same_insert``)."""
    for number, step in open_steps(plan):
        if step.operation == op and step.run_at_approval == run:
            return number, step
    return None


def same_insert(
    plan: Plan | None,
    proj: Projection,
    op: InsertCell,
    run: bool,
) -> tuple[int, Step] | None:
    """The open step inserting a cell like ``op`` (source and type) where ``op`` asks for one:
    among the new cells right after its ``after`` cell, right before its ``before`` cell, or at
    the end."""
    steps = {step.id: (number, step) for number, step in open_steps(plan)}
    ids = [c.id for c in proj.cells]
    if op.after is not None:
        at = proj.index(op.after)
        near = ids[at + 1 :] if at is not None else []
    else:
        at = proj.index(op.before) if op.before is not None else len(ids)
        near = list(reversed(ids[:at])) if at is not None else []
    for cell_id in near:
        maker = proj.created_by.get(cell_id)
        if maker is None:
            return None  # the run of new cells next to the anchor ends here
        number, step = steps.get(maker, (0, None))
        made = step.operation if step is not None else None
        if (
            step is not None
            and isinstance(made, InsertCell)
            and (made.source, made.cell_type) == (op.source, op.cell_type)
            and step.run_at_approval == run
        ):
            return number, step
    return None


def refuse_a_cell_being_deleted(plan: Plan | None, op: AnyOperation) -> None:
    """``UsageMistake`` when ``op`` names a cell an open step deletes (a second delete of it is
    the same change: ``same_step`` finds it first)."""
    named = {getattr(op, "cell_id", None)} if not isinstance(op, InsertCell) else set()
    if isinstance(op, InsertCell | MoveCell):
        named |= {op.after, getattr(op, "before", None)}
    for number, step in open_steps(plan):
        deleted = step.operation
        if isinstance(deleted, DeleteCell) and deleted.cell_id in named:
            raise UsageMistake(
                f"cell {deleted.cell_id!r} is to be deleted by step {number} "
                f"({step.status}): reject that step first (`%reject {number}`) to use the cell"
            )
