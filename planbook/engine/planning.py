"""Stage, skip, reorder, reject and revise steps of a plan. Pure plan edits: no document writes.

A revision with an approval is never edited in place: the next edit forks a new revision that
starts as a copy, so every approval keeps naming exactly what it approved.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

from planbook.engine.projection import Projection
from planbook.engine.risk import risk_of
from planbook.engine.rules.runs_later import reason as runs_later_reason
from planbook.errors import UnknownStep, UsageMistake
from planbook.model.cell import CellOutline, CellText
from planbook.model.operations import (
    AnyOperation,
    DeleteCell,
    EditCell,
    InsertCell,
    MoveCell,
    RunCell,
    anchors_of,
    target_of,
)
from planbook.model.plan import ASSIGNMENTS, OPEN_STATUSES, Plan, Revision, Step, StepStatus
from planbook.model.tracked import Prefix
from planbook.workspace.files import Workspace

_STATUS = operator.attrgetter("status")

#: Steps whose effect the projection replays: what will exist once the plan runs.
PROJECTED = OPEN_STATUSES


def projection(
    plan: Plan | None,
    cells: Sequence[CellText],
    workspace: Workspace | None,
    until: int | None = None,
) -> Projection:
    """The notebook and files as they will be after the open steps before index ``until``."""
    proj = Projection(cells, workspace)
    if plan is not None:
        for step in plan.steps[:until]:
            if step.status in PROJECTED and _still_applies(proj, step.operation):
                proj.apply(step.operation, step.id)
    return proj


class ProjectionCache:
    """The projection a plan's staging built last time, extended by the steps staged since
    instead of replayed from the first (staging step 500 replayed 499 steps). Reused only
    while it is certain to equal a fresh replay: the same plan and revision, the steps it
    replayed still the first ones, with the same statuses, and the same cells; files are read
    from disk again each time."""

    def __init__(self) -> None:
        self._proj: Projection | None = None
        self._revision: object = None
        self._workspace: Workspace | None = None
        self._seen: Prefix[Step] = Prefix([])
        self._statuses: list[StepStatus] = []
        #: ``ASSIGNMENTS.count`` when the statuses were read: unchanged, no step was assigned to
        #: since, so they are not read again (a loop over the plan at every staged step).
        self._changes = -1
        self._cells: list[CellText] = []

    def projection(
        self, plan: Plan, cells: Sequence[CellText], workspace: Workspace | None
    ) -> Projection:
        steps = plan.steps
        # An outline (documents/base.py) is compared as it is: the same cells give the same
        # CellOutline objects, so an unchanged notebook compares by identity, cell by cell.
        seen: list[CellText] = (
            list(cells)
            if cells and isinstance(cells[0], CellOutline)
            else [CellOutline(c.id, c.cell_type, c.source) for c in cells]
        )
        done = len(self._seen)
        proj = self._proj
        if (
            proj is None
            or self._revision is not plan.current
            or self._workspace is not workspace
            or not self._seen.starts(steps)
            or (
                ASSIGNMENTS.count != self._changes
                and list(map(_STATUS, steps[:done])) != self._statuses
            )
            or seen != self._cells
        ):
            proj, done, self._statuses = Projection(cells, workspace), 0, []
        else:
            proj.forget_reads()
        for step in steps[done:]:
            if step.status in PROJECTED and _still_applies(proj, step.operation):
                proj.apply(step.operation, step.id)
        self._proj, self._revision, self._workspace = proj, plan.current, workspace
        self._seen = Prefix(steps)
        self._statuses += map(_STATUS, steps[done:])
        self._changes = ASSIGNMENTS.count
        self._cells = seen
        return proj


def _still_applies(proj: Projection, op: AnyOperation) -> bool:
    """Whether an open step can be replayed: one whose cell (or anchor) was deleted outside
    planbook cannot, and is left out, so it refuses only itself (it conflicts at approval)."""
    match op:
        case InsertCell():
            anchors = [a for a in (op.after, op.before) if a is not None]
            return proj.index(op.cell_id) is None and all(
                proj.index(a) is not None for a in anchors
            )
        case EditCell() | DeleteCell() | RunCell():
            return proj.index(op.cell_id) is not None
        case MoveCell():
            return proj.index(op.cell_id) is not None and (
                op.after is None or proj.index(op.after) is not None
            )
        case _:
            return True


def fork(plan: Plan, note: str) -> Revision:
    """Start revision n+1 as a copy of revision n, which is kept as it was."""
    current = plan.current
    revision = Revision(
        number=current.number + 1,
        parent=current.number,
        summary=current.summary,
        feedback=note,
        steps=[s.model_copy(deep=True) for s in current.steps],
    )
    plan.revisions.append(revision)
    return revision


def editable(plan: Plan, note: str) -> Revision:
    """The current revision, or a fresh copy of it when it already has an approval."""
    if any(a.revision == plan.current.number for a in plan.approvals):
        return fork(plan, note)
    return plan.current


def stage(
    plan: Plan,
    op: AnyOperation,
    *,
    reason: str,
    cells: Sequence[CellText],
    workspace: Workspace | None,
    run_at_approval: bool = False,
    origin: str | None = None,
    cache: ProjectionCache | None = None,
) -> Step:
    proj = (
        projection(plan, cells, workspace)
        if cache is None
        else cache.projection(plan, cells, workspace)
    )
    proj.check(op)
    if run_at_approval:
        _check_runs_code(proj, op)
    depends = [proj.touched_by[target_of(op)]] if target_of(op) in proj.touched_by else []
    # An anchor only needs to exist: a step depends on the one that creates it, not on edits.
    depends += [proj.created_by[a] for a in anchors_of(op) if a in proj.created_by]
    # It runs code the next time a kernel, git or an editor starts: high risk, and why.
    runs_later = runs_later_reason(op, workspace.root) if workspace is not None else None
    step = Step(
        operation=op,
        reason=reason,
        risk="high" if runs_later else risk_of(op, proj),
        base=proj.target_hash(op),
        depends_on=tuple(dict.fromkeys(depends)),
        run_at_approval=run_at_approval,
        origin=origin,
        runs_later=runs_later,
    )
    editable(plan, "added a step").steps.append(step)
    plan.fire("stage")
    return step


def _check_runs_code(proj: Projection, op: AnyOperation) -> None:
    """``run=True`` (``%%propose --run``) runs the cell's text as code: only for a code cell.
    The messages name the magic's option; each surface says it in its words (errors.speak)."""
    if isinstance(op, InsertCell) and op.cell_type != "code":
        raise UsageMistake(
            f"a {op.cell_type} cell cannot run: stage it without `%%propose --run` "
            "(only code cells run)"
        )
    if isinstance(op, EditCell) and proj.cell(op.cell_id).cell_type != "code":
        raise UsageMistake(
            f"cell {op.cell_id!r} is a {proj.cell(op.cell_id).cell_type} cell, so it cannot "
            "run: stage the edit without `%%propose --run` (only code cells run)"
        )
    if not isinstance(op, InsertCell | EditCell):
        raise UsageMistake(
            f"`%%propose --run` applies to new or edited cells, not to {op.kind}; "
            "stage a run step instead: `%propose --run-cell CELL`"
        )


def step_at(plan: Plan, number: int) -> Step:
    if not 1 <= number <= len(plan.steps):
        raise UnknownStep(number, len(plan.steps))
    return plan.steps[number - 1]


def set_skipped(plan: Plan, number: int, skipped: bool) -> Step:
    step = step_at(plan, number)
    want_from, want_to = ("pending", "skipped") if skipped else ("skipped", "pending")
    if step.status != want_from:
        raise UsageMistake(
            f"step {number} is {step.status}; only a {want_from} step can be "
            f"{'skipped' if skipped else 'unskipped'}"
        )
    step.status = want_to  # type: ignore[assignment]
    return step


def move(plan: Plan, number: int, before: int) -> None:
    """Move step ``number`` so that it stands just before step ``before`` (len+1: to the end)."""
    steps = plan.steps
    step_at(plan, number)
    if not 1 <= before <= len(steps) + 1:
        raise UnknownStep(before, len(steps))
    if steps[number - 1].status not in ("pending", "skipped"):
        raise UsageMistake(f"step {number} is {steps[number - 1].status}; only pending steps move")
    if before in (number, number + 1):
        return  # it already stands there: nothing to change, no new revision
    order = list(steps)
    moving = order[number - 1]
    target = order[before - 1] if before <= len(order) else None
    order.remove(moving)
    order.insert(order.index(target) if target is not None else len(order), moving)
    _check_order(order)
    editable(plan, f"moved step {number} before {before}").steps[:] = [
        s.model_copy(deep=True) for s in order
    ]


def _check_order(order: list[Step]) -> None:
    seen: set[str] = set()
    for n, step in enumerate(order, start=1):
        for dep in step.depends_on:
            if dep not in seen and any(s.id == dep for s in order):
                raise UsageMistake(
                    f"that order would put step {n} before the step it builds on; "
                    "move the other step too, or skip this one"
                )
        seen.add(step.id)


def revise(plan: Plan, feedback: str) -> Revision:
    """Start revision n+1 from the steps not yet run; the old revision is kept as it was."""
    if not feedback.strip():
        raise UsageMistake('say what should change: `%plan revise "use a bar chart instead"`')
    plan.fire("request_revision")
    return fork(plan, feedback)
