"""The approval-hash check before each step of a run, without hashing every approved step again
while none of the plan's steps changed since the last check.

A run checks, before each step, that the approved steps still hash to what was approved
(``engine/approval.py``). Done in full, that check reads every approved step: a run of n
steps reads n x n steps, so step 500 of a run paid ten times what step 50 did. A check that
held is remembered with the plan's list of steps (the very objects) and
``ASSIGNMENTS.count``; the next one is taken as holding only when the list holds the same
objects and every step assigned to since (``Step.assigned_since``) still has the id,
operation, base and ``run_at_approval`` it was hashed with (those are all a step's hash is
made of; an operation is frozen, so the same object dumps the same). Anything else (a step
added, removed or replaced, more assignments than are kept, a record read again from the
file: new objects) is checked in full again.
"""

from __future__ import annotations

from dataclasses import dataclass

from planbook.engine.approval import approval_hash, steps_for
from planbook.model.plan import ASSIGNMENTS, Approval, Plan, Step
from planbook.model.tracked import Prefix

#: What a step's approval hash is made of: its operation (compared by identity), id, base
#: and ``run_at_approval``.
_MadeOf = tuple[object, str, str, bool]


def _made_of(step: Step) -> _MadeOf:
    return (step.operation, step.id, step.base, step.run_at_approval)


def _same(kept: _MadeOf, step: Step) -> bool:
    now = _made_of(step)
    return kept[0] is now[0] and kept[1:] == now[1:]


@dataclass
class _Held:
    approval: Approval
    #: the plan's list of steps when the check held, and the objects it held
    listed: list[Step]
    steps: Prefix[Step]
    #: ``ASSIGNMENTS.count`` when it held
    changes: int
    #: id(step) -> what its hash was made of, for every step of the list
    made: dict[int, _MadeOf]


class ApprovalCheck:
    """``holds(plan, approval)``: the approved steps still hash to ``approval.sha256``."""

    def __init__(self) -> None:
        self._held: _Held | None = None
        #: how many checks hashed the approved steps in full (counted by tests)
        self.full_checks = 0

    def holds(self, plan: Plan, approval: Approval) -> bool:
        listed = plan.steps
        held = self._held
        if (
            held is not None
            and held.approval is approval
            and held.listed is listed
            and len(listed) == len(held.steps)
            and held.steps.starts(listed)  # O(1) for a tracked list, else a C loop
        ):
            now, assigned = Step.assigned_since(held.changes)
            if assigned is not None and all(
                _same(held.made[id(s)], s) for s in assigned if id(s) in held.made
            ):
                held.changes = now
                return True
        return self._full(plan, approval)

    def _full(self, plan: Plan, approval: Approval) -> bool:
        self._held = None
        self.full_checks += 1
        changes = ASSIGNMENTS.count  # before the hash: an assignment after it is looked at next
        listed = plan.steps
        if approval_hash(steps_for(plan, approval.step_ids)) != approval.sha256:
            return False
        self._held = _Held(
            approval, listed, Prefix(listed), changes, {id(s): _made_of(s) for s in listed}
        )
        return True
