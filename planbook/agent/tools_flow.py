"""Flow tools: present the plan, ask the person, keep todos, offer a mode switch.

``ask_user`` and the mode-switch offers are decision points: the run waits (without blocking the
kernel) until the person answers in the panel or with ``%answer``.
"""

from __future__ import annotations

from typing import Literal

from pydantic_ai import ModelRetry, RunContext

from planbook.agent.context import AgentDeps, todos_of
from planbook.agent.plan_listing import plan_listing
from planbook.agent.todos import Todo
from planbook.errors import PlanbookError
from planbook.model.events import Event
from planbook.model.plan import Plan
from planbook.model.words import count


async def present_plan(ctx: RunContext[AgentDeps], summary: str) -> str:
    """Hand the staged plan to the person for review; call it once the plan is complete.

    Args:
        summary: Markdown shown on top of the plan: what it does and why, in a few lines.
    """
    session = ctx.deps.session
    plan = session.current_plan()
    if plan is None or not plan.is_open or not plan.steps:
        raise ModelRetry(
            "there are no staged steps to present: propose the changes first "
            "(or, if nothing needs changing, just answer in text)"
        )
    try:
        session.set_summary(summary)
    except PlanbookError as exc:
        raise ModelRetry(str(exc)) from None
    ctx.deps.say("status", f"plan presented with {count(plan.steps, 'step')}: {_where(plan)}")
    if any(step.status == "pending" for step in plan.steps):
        return (
            "The plan is now waiting for the person's approval. Stop here: end your turn with "
            "one short sentence; do not stage more steps unless asked."
        )
    return (
        f"No step waits for approval ({_where(plan)}): the mode applied them as you made them. "
        "Stop here: end your turn with one short sentence saying what was done."
    )


#: How the log says a step's status (in act and auto-edit modes steps apply as they come).
_SAID = {"done": "applied", "pending": "awaiting approval", "rolled_back": "rolled back"}


def _where(plan: Plan) -> str:
    """Where the presented steps stand: ``3 applied``, ``awaiting approval`` (all pending, as in
    plan mode), ``1 applied, 2 awaiting approval``."""
    statuses = [step.status for step in plan.steps]
    if all(status == "pending" for status in statuses):
        return "awaiting approval"
    counted = {status: statuses.count(status) for status in dict.fromkeys(statuses)}
    return ", ".join(f"{n} {_SAID.get(status, status)}" for status, n in counted.items())


async def read_plan(ctx: RunContext[AgentDeps]) -> str:
    """The whole plan as it stands: every step with its number, id, status and reason.

    Each request only tells you what changed in the plan since your last one; use this when you
    need to see it all again.
    """
    return plan_listing(ctx.deps.session)


async def ask_user(ctx: RunContext[AgentDeps], question: str, options: list[str]) -> str:
    """Ask the person a question and wait for the answer (use when a choice is theirs to make).

    Args:
        question: The question, one or two lines.
        options: The choices to offer (the person may also be allowed free text if empty).
    """
    answer = await ctx.deps.decide(question, options, kind="question", call_id=ctx.tool_call_id)
    return f"The person answered: {answer.choice}" + (f" ({answer.text})" if answer.text else "")


async def ask_before_step(
    ctx: RunContext[AgentDeps], step_number: int, question: str, options: list[str]
) -> str:
    """Make a staged step a decision point: when the approved plan reaches it, execution
    pauses and asks the person; their answer is recorded, and "stop here" leaves it unrun.

    Args:
        step_number: The step's number in the plan.
        question: What to ask just before the step runs, one line.
        options: The answers to offer ("stop here" is always added).
    """
    try:
        asked = ctx.deps.session.ask_before(step_number, question, options)
    except PlanbookError as exc:
        raise ModelRetry(str(exc)) from None
    ctx.deps.say("staged", f"step {step_number} will ask first: {question}")
    return f"Step {step_number} will pause and ask: {asked.question} ({' / '.join(asked.options)})"


async def todo_write(ctx: RunContext[AgentDeps], todos: list[Todo]) -> str:
    """Replace your todo list; link each todo to the ids of the steps that carry it out.

    Args:
        todos: The whole list, in order.
    """
    session = ctx.deps.session
    plan = session.current_plan()
    known = {s.id for s in plan.steps} if plan else set()
    unknown = sorted({i for t in todos for i in t.step_ids} - known)
    if unknown:
        raise ModelRetry(f"unknown step ids {unknown}: use the step ids the write tools returned")
    todo_list = todos_of(session)
    todo_list.replace(todos)
    if ctx.deps.keeper is not None:
        ctx.deps.keeper.todos(todos)
    views = todo_list.views(plan)
    session.events.emit(
        Event(
            kind="todos_changed",
            plan_id=plan.id if plan else None,
            data={"todos": [v.model_dump() for v in views]},
        )
    )
    done = sum(1 for t in todos if t.status == "done")
    ctx.deps.say("status", f"todos: {done}/{len(todos)} done")
    return f"Todo list saved ({len(todos)} items)."


async def _offer_mode(ctx: RunContext[AgentDeps], mode: str, reason: str) -> str:
    session = ctx.deps.session
    if session.mode == mode:
        return f"Already in {mode} mode."
    answer = await ctx.deps.decide(
        f"The agent suggests switching from {session.mode} to {mode} mode: {reason}",
        [f"switch to {mode}", "stay"],
        kind="mode_switch",
        data={"mode": mode},
        call_id=ctx.tool_call_id,
    )
    if answer.choice != f"switch to {mode}":
        return f"The person chose to stay in {session.mode} mode. Carry on in it."
    session.set_mode(mode)
    return f"Switched to {mode} mode."


async def enter_plan(ctx: RunContext[AgentDeps], reason: str) -> str:
    """Suggest switching to plan mode (changes are staged for review); the person decides.

    Args:
        reason: Why plan mode fits this task.
    """
    return await _offer_mode(ctx, "plan", reason)


async def exit_plan(
    ctx: RunContext[AgentDeps], reason: str, mode: Literal["ask", "auto-edit", "act"] = "act"
) -> str:
    """Suggest leaving plan mode (ask: approve each change; act: changes apply at once).

    Args:
        reason: Why the switch helps.
        mode: The mode to switch to.
    """
    return await _offer_mode(ctx, mode, reason)


FLOW_TOOLS = [present_plan, read_plan, ask_user, ask_before_step, todo_write, enter_plan, exit_plan]
