"""Restoring an earlier revision of a plan. A pure plan edit: no document writes.

A revision is never edited in place, so a restore makes an earlier revision current again as a
new revision, and the history keeps every step of the way. (Comparing two revisions is text for
the person: ``present/text.py``'s ``revision_diff``.)
"""

from __future__ import annotations

from planbook.errors import UsageMistake
from planbook.model.plan import Plan, Revision, Step

#: Statuses that record something that happened in the world: a restore keeps them.
_HAPPENED = frozenset({"running", "done", "failed", "conflict", "rolled_back"})


def restore(plan: Plan, number: int) -> Revision:
    """Make revision ``number`` current again as revision n+1 (its steps, its summary).

    Steps that have run since keep what happened to them (a done step stays done); the others
    come back as they were in that revision, pending again if they had been approved."""
    source = plan.revision(number)
    if source is plan.current:
        raise UsageMistake(f"revision {number} is already the current one")
    if plan.state == "executing":
        raise UsageMistake("a run is in progress: restore a revision when it has finished")
    now = {s.id: s for s in plan.current.steps}
    steps: list[Step] = []
    for step in source.steps:
        latest = now.get(step.id)
        if latest is not None and latest.status in _HAPPENED:
            steps.append(latest.model_copy(deep=True))
        else:
            copy = step.model_copy(deep=True)
            if copy.status in ("approved", "running"):
                copy.status = "pending"
            steps.append(copy)
    revision = Revision(
        number=plan.current.number + 1,
        parent=number,
        summary=source.summary,
        feedback=f"restored revision {number}",
        steps=steps,
    )
    if not plan.is_open:
        plan.fire("reopen")
    else:
        plan.fire("request_revision")
        plan.fire("present")
    plan.revisions.append(revision)
    return revision
