"""Taking over a step another host left approved or running: the person's explicit way out.

A step being run carries its runner's token (engine/owner.py). A runner on this host that died
is settled by recovery on its own; one on another host cannot be checked from here, so it is
assumed alive and its steps wait. When that host is gone for good (a laptop closed mid-run, a
notebook received with a run cut off), the person takes the step over: after a confirmation,
this process treats that runner as gone and settles its steps as recovery settles a dead
one's: a step whose change did not land goes back to pending (nothing was applied; approve it
again), one whose change landed is recorded as it ended (its checkpoint kept, so it can be
rolled back), one whose code may have been running is failed with a line saying so, to run
again. Nothing runs here. A runner on this host that is alive is never taken over.
"""

from __future__ import annotations

from dataclasses import dataclass

from planbook.engine import owner
from planbook.engine.executor.run import Executor
from planbook.engine.planning import step_at
from planbook.engine.store import Store
from planbook.errors import NothingToDo, PlanbookError, UsageMistake
from planbook.model.plan import Plan

__all__ = ["Takeover", "take_over"]


@dataclass(frozen=True)
class Takeover:
    """What taking over step ``number`` means (``done`` False: only asked) or did."""

    number: int
    #: Who was running it, as a person reads it: "process 412 on host-b".
    runner: str
    done: bool
    #: One line for the person: the question before, what became of the step after.
    line: str


def take_over(
    plan: Plan, number: int, executor: Executor, store: Store, *, confirm: bool
) -> Takeover:
    """Check that step ``number`` of ``plan`` may be taken over; with ``confirm``, settle it.
    Call with the notebook held and the saved state loaded (``Session._editing``)."""
    step = step_at(plan, number)
    if step.status not in ("approved", "running") or not step.run_by:
        raise NothingToDo(f"step {number} is {step.status}: no other process runs it")
    token = step.run_by
    runner = owner.describe(token)
    if owner.on_this_host(token):
        # A dead runner on this host was settled when the notebook was opened: it is alive.
        raise UsageMistake(
            f"step {number} is {step.status} in {runner}, which is alive on this host: wait "
            "for it, or stop it there; only a run on another host can be taken over"
        )
    if not confirm:
        return Takeover(
            number,
            runner,
            False,
            f"step {number} is {step.status} in {runner}; if that process is gone, taking it "
            "over settles it here as interrupted (nothing runs; a change that landed keeps "
            "its checkpoint) so it can be approved again",
        )
    owner.give_up(token)
    notes = executor.recover()
    fresh = store.plan_by_id(plan.id).find_step(step.id)
    if fresh is None or fresh.status in ("approved", "running"):
        raise PlanbookError(
            f"step {number} could not be settled ({'; '.join(notes) or 'no run to end'}); "
            "see `%plan`"
        )
    here = owner.describe(owner.this_process())
    store.log("takeover", f"{step.id}: taken over from {runner} by {here}; now {fresh.status}")
    store.save()
    what = {
        "pending": "pending again: nothing of it had landed; approve it to run it here",
        "done": "done: its change had landed (its checkpoint is kept)",
        "failed": f"failed: {fresh.error or 'interrupted'}",
    }.get(fresh.status, fresh.status)
    return Takeover(number, runner, True, f"step {number}, taken over from {runner}, is {what}")
