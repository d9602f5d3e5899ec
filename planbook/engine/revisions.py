"""Comparing and restoring revisions of a plan. Pure plan edits: no document writes.

A revision is never edited in place, so both work on what the person actually saw: the diff
names every step added, changed, moved or withdrawn between two revisions; a restore makes an
earlier revision current again as a new revision, so the history keeps every step of the way.
"""

from __future__ import annotations

from planbook.errors import UsageMistake
from planbook.model.plan import Plan, Revision, Step

#: Statuses that record something that happened in the world: a restore keeps them.
_HAPPENED = frozenset({"running", "done", "failed", "conflict", "rolled_back"})
_WITHDRAWN = frozenset({"rejected"})


def diff(plan: Plan, a: int, b: int) -> list[str]:
    """What changed from revision ``a`` to ``b``, a line each."""
    from planbook.engine.planning import describe

    old, new = plan.revision(a), plan.revision(b)
    old_by = {s.id: (i, s) for i, s in enumerate(old.steps, start=1)}
    new_by = {s.id: (i, s) for i, s in enumerate(new.steps, start=1)}
    lines = []
    if old.summary != new.summary:
        lines.append("summary changed")
    if new.feedback and new.parent == a:
        lines.append(f"feedback: {new.feedback}")
    for sid, (i, s) in new_by.items():
        if sid not in old_by:
            mark = "withdrawn" if s.status in _WITHDRAWN else "added"
            lines.append(f"{'-' if mark == 'withdrawn' else '+'} step {i} {mark}: {describe(s)}")
            continue
        j, o = old_by[sid]
        if s.status in _WITHDRAWN and o.status not in _WITHDRAWN:
            lines.append(f"- step {i} withdrawn: {describe(s)}")
        elif o.status in _WITHDRAWN and s.status not in _WITHDRAWN:
            lines.append(f"+ step {i} put back: {describe(s)}")
        elif o.operation != s.operation:
            lines.append(f"~ step {i} changed: {describe(s)}")
        elif i != j:
            lines.append(f"> step {j} moved to {i}: {describe(s)}")
    for sid, (j, o) in old_by.items():
        if sid not in new_by:
            lines.append(f"- step {j} removed: {describe(o)}")
    return lines or ["no differences"]


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
