"""A proposal the plan already holds: re-running the cell that proposed it (``%%propose``,
``pb.propose.delete_cell(...)``) finds the open step that makes exactly this change and gives
it back instead of staging it twice, or, when an open step deletes the target cell, says so
in one line instead of "no such cell" about a cell still on screen.

"The same change": the same operation (kind, target and content) with the same run flag; for a
new cell, the same source and type at the same place (new cells get a new id each time, and a
second insert after one cell is placed after the first one, engine ``_keep_plan_order``)."""

from __future__ import annotations

import operator

from planbook.engine import planning
from planbook.engine.projection import Projection
from planbook.errors import UsageMistake
from planbook.model.operations import AnyOperation, DeleteCell, InsertCell, MoveCell
from planbook.model.plan import ASSIGNMENTS, Plan, Step
from planbook.model.tracked import Prefix

Numbered = tuple[int, Step]


class OpenSteps:
    """The open steps of the current plan, looked up by operation, by id and by the cell they
    delete, kept between proposals and extended by the steps staged since: each proposal
    looked at every step of the plan three times (staging step 500 compared 500 operations).
    Reused only while certain to equal a fresh look: the same list of steps, the steps it saw
    still the first ones, and no step assigned to since (``ASSIGNMENTS``: a status)."""

    def __init__(self) -> None:
        self._seen: Prefix[Step] = Prefix([])
        self._changes = -1
        self._clear()

    def _clear(self) -> None:
        #: (operation, run flag) -> the first open step making it (hashable operations)
        self._by_operation: dict[tuple[AnyOperation, bool], Numbered] = {}
        #: open steps whose operation does not hash (an MCP call's arguments): compared one by one
        self._unhashable: list[Numbered] = []
        self.by_id: dict[str, Numbered] = {}
        #: cell id -> the first open step deleting it
        self._deleting: dict[str, Numbered] = {}

    def of(self, plan: Plan | None) -> OpenSteps:
        """Brought up to date with ``plan``'s steps (as ``%plan`` numbers them)."""
        steps = plan.steps if plan is not None else []
        done = len(self._seen)
        if not (self._changes == ASSIGNMENTS.count and self._seen.starts(steps)):
            self._clear()
            done = 0
        for number, step in enumerate(steps[done:], start=done + 1):
            if step.status in planning.PROJECTED:
                self._add(number, step)
        self._seen, self._changes = Prefix(steps), ASSIGNMENTS.count
        return self

    def _add(self, number: int, step: Step) -> None:
        op, numbered = step.operation, (number, step)
        self.by_id.setdefault(step.id, numbered)
        try:
            self._by_operation.setdefault((op, step.run_at_approval), numbered)
        except TypeError:  # a field holds a list or a dict
            self._unhashable.append(numbered)
        if isinstance(op, DeleteCell):
            self._deleting.setdefault(op.cell_id, numbered)

    def same_step(self, op: AnyOperation, run: bool) -> Numbered | None:
        """The open step that makes exactly ``op`` (not an insert: see ``same_insert``)."""
        try:
            found = self._by_operation.get((op, run))
        except TypeError:
            found = None
        for number, step in self._unhashable:
            if found is not None and number > found[0]:
                break
            if step.operation == op and step.run_at_approval == run:
                return number, step
        return found

    def refuse_a_cell_being_deleted(self, op: AnyOperation) -> None:
        """``UsageMistake`` when ``op`` names a cell an open step deletes (a second delete of
        it is the same change: ``same_step`` finds it first)."""
        named = {getattr(op, "cell_id", None)} if not isinstance(op, InsertCell) else set()
        if isinstance(op, InsertCell | MoveCell):
            named |= {op.after, getattr(op, "before", None)}
        hits = [(*self._deleting[c], c) for c in named if c is not None and c in self._deleting]
        if hits:
            number, step, cell_id = min(hits, key=operator.itemgetter(0))
            raise UsageMistake(
                f"cell {cell_id!r} is to be deleted by step {number} "
                f"({step.status}): reject that step first (`%reject {number}`) to use the cell"
            )


def same_insert(
    open_steps: OpenSteps,
    proj: Projection,
    op: InsertCell,
    run: bool,
) -> tuple[int, Step] | None:
    """The open step inserting a cell like ``op`` (source and type) where ``op`` asks for one:
    among the new cells right after its ``after`` cell, right before its ``before`` cell, or at
    the end."""
    steps = open_steps.by_id
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
