"""Decision points on steps: execution pauses before a step until the person answers.

The agent marks a staged step with a question (``ask_before_step``); the question is kept in
the notebook with the conversation. When an approved run reaches that step, the executor's
``before_step`` hook (installed here) pauses the run: the step and the approved ones after it go
back to pending, and the question is opened for the panel and ``%answer``. The answer is written
to the notebook's log, and unless it is "stop" the steps the pause held back run at once.
A kernel restarted in between opens the question again (``install``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from planbook.agent.state import decisions_of, state_of
from planbook.errors import UsageMistake
from planbook.model.conversation import Conversation, StepQuestion

if TYPE_CHECKING:
    from planbook.agent.decisions import Answer, Decision
    from planbook.model.plan import Plan, Step
    from planbook.sessions.session import Session

STOP = "stop here"


def ask_before(session: Session, number: int, question: str, options: list[str]) -> StepQuestion:
    """Make step ``number`` of the open plan a decision point."""
    plan = session.current_plan()
    if plan is None or not plan.is_open or not 1 <= number <= len(plan.steps):
        count = len(plan.steps) if plan else 0
        raise UsageMistake(f"there is no step {number} to ask about (the plan has {count})")
    step = plan.steps[number - 1]
    if step.status != "pending":
        raise UsageMistake(f"step {number} is {step.status}: only a pending step can ask first")
    asked = StepQuestion(
        step_id=step.id,
        question=question,
        options=[*dict.fromkeys([*options, STOP])],
    )

    def put(conversation: Conversation) -> None:
        conversation.step_questions = [
            q for q in conversation.step_questions if q.step_id != step.id
        ] + [asked]

    from planbook.agent import memory

    memory.update(session, put)
    install(session)
    return asked


def install(session: Session) -> None:
    """Hook the decision points into the session's executor; reopen questions a previous
    kernel left waiting."""
    if session.executor.before_step is None:
        session.executor.before_step = lambda plan, step: _gate(session, plan, step)
    conversation = session.store.state.conversation
    if conversation is None:
        return
    asked = {d.data.get("step_id") for d in decisions_of(session).pending()}
    for question in conversation.step_questions:
        if question.answer is None and question.resume and question.step_id not in asked:
            _open(session, question)


def _gate(session: Session, plan: Plan, step: Step) -> str | None:
    conversation = session.store.state.conversation
    question = next(
        (q for q in (conversation.step_questions if conversation else []) if q.step_id == step.id),
        None,
    )
    if question is None or question.answer is not None:
        return None
    # Inside the executor's transaction: its closing save writes this with the run's results.
    question.resume = [s.id for s in plan.steps if s.status == "approved"]
    if not any(d.data.get("step_id") == step.id for d in decisions_of(session).pending()):
        decision = _open(session, question)
    else:
        decision = next(d for d in decisions_of(session).pending() if d.data["step_id"] == step.id)
    number = plan.steps.index(step) + 1
    session.store.log("paused", f"before step {number}: {question.question}")
    return (
        f"paused before step {number}: {question.question} — answer with "
        f"`%answer {decision.id} <{' / '.join(question.options)}>` or in the panel; the "
        "approved steps from there run once you answer"
    )


def _open(session: Session, question: StepQuestion) -> Decision:
    return decisions_of(session).park(
        question.question,
        question.options,
        lambda answer: _answered(session, question.step_id, answer),
        data={"step_id": question.step_id},
    )


def _answered(session: Session, step_id: str, answer: Answer) -> None:
    resume: list[str] = []

    def put(conversation: Conversation) -> None:
        for question in conversation.step_questions:
            if question.step_id == step_id:
                question.answer = answer.choice
                resume.extend(question.resume)
                question.resume = []
        session.store.log("answered", f"step {step_id}: {answer.choice}")

    from planbook.agent import memory

    memory.update(session, put)
    if answer.choice == STOP:
        return
    plan = session.current_plan()
    if plan is None:
        return
    numbers = [n for n, s in enumerate(plan.steps, start=1) if s.id in resume]
    numbers = [n for n in numbers if plan.steps[n - 1].status == "pending"]
    if numbers:
        report = session.approve(",".join(str(n) for n in numbers), by="answer to step question")
        # The surface that took the answer says how the run went (see magics_agent.answer_line).
        state_of(session).step_question_report = report
