"""Checkpoints named for people: "before step 3: edit cell #5, plot revenue" (the step's number,
what it did and where, then its reason or the first line of the cell), never a bare id.

Names are made when shown, from the plan the checkpoint belongs to, so checkpoints written by
older versions (labelled "before step 3 (edit_cell)") read the same way.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from planbook.model.cell import first_line
from planbook.model.checkpoint import Checkpoint
from planbook.model.operations import (
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
from planbook.model.plan import Plan, Step

_ROLLBACK_TARGET = re.compile(r"rollback to (cp-[0-9a-z]+)")
#: What the executor adds to a shell or MCP step's label, worth keeping in the name.
_NOTES = ("shell commands are not undone by rollback", "MCP calls are not undone by rollback")


def _find_step(plans: Sequence[Plan], cp: Checkpoint) -> tuple[int, Step] | None:
    for plan in plans:
        if plan.id != cp.plan:
            continue
        for revision in reversed(plan.revisions):
            for number, step in enumerate(revision.steps, start=1):
                if step.id == cp.step:
                    return number, step
    return None


def _what(step: Step, cp: Checkpoint) -> str:
    """What the step did, the target named by its position when the checkpoint knows it."""
    op = step.operation
    position = next((s.index for s in cp.cells if s.index is not None), None)
    cell = f"cell #{position + 1}" if position is not None else "a cell"
    match op:
        case InsertCell():
            return f"insert {'a markdown cell' if op.cell_type == 'markdown' else 'a cell'}"
        case EditCell():
            return f"edit {cell}"
        case DeleteCell():
            return f"delete {cell}"
        case MoveCell():
            return f"move {cell}"
        case RunCell():
            return f"run {cell}"
        case WriteFile():
            return f"write {op.path}"
        case EditFile():
            return f"edit {op.path}"
        case DeleteFile():
            return f"delete {op.path}"
        case Shell():
            return f"run `{first_line(op.command, 40)}`"
        case McpCall():
            return f"call {op.name}"


def _subject(step: Step) -> str:
    """The step's reason, or the first line of the cell it writes."""
    if step.reason.strip():
        return first_line(step.reason, 60)
    source = getattr(step.operation, "source", None)
    return first_line(source, 60) if isinstance(source, str) else ""


def checkpoint_name(
    cp: Checkpoint, plans: Sequence[Plan], checkpoints: Sequence[Checkpoint]
) -> str:
    """How a person reads ``cp``: in the panel, ``%checkpoints``, the CLI and rollback messages."""
    if cp.kind == "rollback":
        match = _ROLLBACK_TARGET.search(cp.label)
        target = next((c for c in checkpoints if match and c.id == match.group(1)), None)
        if target is not None and target.kind == "step":
            return f"rollback to {checkpoint_name(target, plans, checkpoints)}"
        return cp.label or "rollback"
    found = _find_step(plans, cp)
    if found is None:
        return cp.label or f"checkpoint {cp.id}"
    number, step = found
    subject = _subject(step)
    name = f"before step {number}: {_what(step, cp)}" + (f", {subject}" if subject else "")
    return name + "".join(f" ({note})" for note in _NOTES if note in cp.label)


def checkpoint_names(plans: Sequence[Plan], checkpoints: Sequence[Checkpoint]) -> dict[str, str]:
    return {cp.id: checkpoint_name(cp, plans, checkpoints) for cp in checkpoints}
