"""Questions steps wait on, offered as decisions: ``%answer`` and the panel list and answer
them along with the agent's own questions.

A step's question is data on the step (``Step.ask_first``, engine/ask_first.py): the Session
sets it (``Session.ask_before``, which the agent's ``ask_before_step`` calls), the executor
pauses on it by itself, and ``Session.answer_step`` takes the answer. Here each question a run
paused on becomes a parked decision of the session's registry, kept in step with the plan after
every run and change (one answered elsewhere is withdrawn); answering it calls
``Session.answer_step``, which runs the steps the pause held back.
"""

from __future__ import annotations

import functools

from planbook.agent.decisions import Answer, Decisions
from planbook.agent.state import state_of
from planbook.errors import UsageMistake
from planbook.model.events import Event
from planbook.sessions.session import Session

#: Session events after which the questions steps wait on may have changed.
_FOLLOWED = frozenset({"run_finished", "plan_changed"})


def offer(session: Session, decisions: Decisions) -> None:
    """Park a decision for each question the session's steps wait on, now and after every
    run or change of the plan."""
    busy = False

    def follow(event: Event) -> None:
        nonlocal busy
        if event.kind not in _FOLLOWED or busy:
            return
        busy = True  # reading the plan may settle a reload, which tells of a change again
        try:
            _sync(session, decisions)
        finally:
            busy = False

    _sync(session, decisions)
    session.subscribe(follow)


def _sync(session: Session, decisions: Decisions) -> None:
    waiting = {step.id: step for _, step in session.waiting_questions()}
    parked = {d.data["step_id"]: d.id for d in decisions.pending() if "step_id" in d.data}
    for step_id, decision_id in parked.items():
        if step_id not in waiting:
            decisions.withdraw(decision_id)  # answered through the Session, or the step is gone
    for step_id, step in waiting.items():
        if step_id in parked or step.ask_first is None:
            continue
        decisions.park(
            step.ask_first.question,
            step.ask_first.options,
            functools.partial(_answered, session, step_id),
            data={"step_id": step_id},
        )


def _answered(session: Session, step_id: str, answer: Answer) -> None:
    plan = session.current_plan()
    steps = plan.steps if plan is not None else []
    number = next((n for n, s in enumerate(steps, start=1) if s.id == step_id), None)
    if number is None:
        raise UsageMistake("the step that asked is no longer in the plan; nothing was answered")
    report = session.answer_step(number, answer.choice)
    if report is not None:
        # The surface that took the answer says how the run went (see magics_agent.answer_line).
        state_of(session).step_question_report = report
