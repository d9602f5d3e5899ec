"""The agent's pieces of the magics: ``%plan "task"``, ``%%plan``, ``%plan revise``, ``%plan
stop``, ``%plan continue``, ``%plan rules``, ``%answer`` and ``%config Planbook.model = ...``.

planbook/surfaces/plan_verbs.py owns ``%plan``'s verbs; they call ``start_plan``,
``stop_plan``, ``continue_plan``, ``rules_text`` and ``revoke_rule`` here, and
``register(ipython)`` adds the rest (the ``Planbook`` configurable, the ``%%plan`` cell magic
and ``%answer``). The run streams into a live output (a
display handle updated in place), so the cell returns at once and the activity keeps appearing.
"""

from __future__ import annotations

import json
import shlex
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from planbook.agent import memory, view
from planbook.agent.activity import Activity
from planbook.agent.context import decisions_of, todos_of
from planbook.agent.decisions import Answer, Decision, Decisions
from planbook.agent.permissions import revoke, rule_views
from planbook.agent.state import state_of
from planbook.errors import PlanbookError, UsageMistake
from planbook.model.conversation import SavedDecision
from planbook.model.questions import PersonQuestion
from planbook.present.questions import question_line
from planbook.present.safe import visible
from planbook.sessions.session import Session
from planbook.surfaces import api
from planbook.surfaces.kernel_config import Planbook, add_configurable
from planbook.surfaces.magic_common import kernel_session
from planbook.surfaces.say import say

if TYPE_CHECKING:
    from planbook.agent.run import AgentRun  # heavy: the agent, loaded when a magic asks

__all__ = [
    "Planbook",
    "answer_line",
    "continue_plan",
    "conversation_text",
    "register",
    "revise_plan",
    "revoke_rule",
    "rules_text",
    "start_plan",
    "stop_plan",
]


class LiveView:
    """What the %plan output shows while (and after) the agent runs."""

    def __init__(self, run: AgentRun) -> None:
        self.run = run
        self._handle: Any = None

    def _repr_markdown_(self) -> str:
        return view.markdown(self.run)

    def __repr__(self) -> str:
        return view.text(self.run)

    def show(self) -> None:
        try:
            # heavy: IPython
            from IPython.display import display
        except ImportError:
            return
        self._handle = display(self, display_id=True)  # type: ignore[no-untyped-call]
        self.run.on_activity(self._update)

    def _update(self, _: Activity) -> None:
        if self._handle is not None:
            self._handle.update(self)


def start_plan(session: Session, task: str, *, show: bool = True) -> AgentRun:
    """``%plan "task"``: start the agent on the kernel's loop and show its live output."""
    from planbook.agent.run import plan_task  # heavy: the agent (not on `%load_ext planbook`)

    run = plan_task(session, task)
    state_of(session).reviser = lambda feedback: revise_plan(session, feedback)
    if show:
        LiveView(run).show()
    return run


def revise_plan(session: Session, feedback: str, *, show: bool = True) -> AgentRun:
    """``%plan revise "feedback"`` with an agent configured: the agent makes the next revision."""
    from planbook.agent.run import revise_task  # heavy: the agent (not on `%load_ext planbook`)

    run = revise_task(session, feedback)
    if show:
        LiveView(run).show()
    return run


def stop_plan(session: Session) -> str:
    """``%plan stop``: end the agent run (the staged plan is kept)."""
    from planbook.agent.run import stop_run  # heavy: the agent (not on `%load_ext planbook`)

    stopped = stop_run(session)
    return (
        "planbook: agent stopped; the plan staged so far is kept"
        if stopped
        else ("planbook: no agent run is in progress")
    )


def answer_line(session: Session, line: str) -> str:
    """``%answer``: list open decisions; ``%answer d3 approve``, ``%answer d3 deny "why"``,
    ``%answer d3 2`` (by number), ``%answer d3 edit {"content": "..."}``; an MCP client's
    question: ``%answer q1 yes``, ``%answer q1 2`` or ``%answer q1 your own words``."""
    decisions = decisions_of(session)  # with the questions steps wait on (agent/step_questions)
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise UsageMistake(f"cannot parse `{line}`: {exc}") from None
    live = decisions.pending()
    # With no run alive, the questions are those the last run left in the notebook.
    conversation = None if live or _running(session) else memory.saved(session)
    waiting = conversation.open_decisions() if conversation else []
    # ...and beside them the questions agents outside the kernel asked over MCP
    asked = session.person_questions(waiting_only=True)
    if not words:
        return _open_decisions(session, live, waiting, asked)
    if len(words) < 2:
        raise UsageMistake("usage: `%answer <id> <choice> [reason or edited arguments]`")
    if any(q.id == words[0] for q in session.person_questions()):
        answered = session.answer_question(words[0], " ".join(words[1:]))
        return visible(
            f"planbook: {answered.id} -> {answered.answer} (answered for {answered.origin})"
        )
    decision_id, choice, rest = words[0], words[1], " ".join(words[2:]) or None
    picked: str | int = int(choice) if choice.isdigit() else choice
    args = None
    if rest and choice == "edit":
        try:
            args = json.loads(rest)
        except ValueError:
            raise UsageMistake(
                'edited arguments are JSON: `%answer d1 edit {"content": "..."}`'
            ) from None
        rest = None
    saved_one = next((d for d in waiting if d.id == decision_id), None)
    if saved_one is not None:
        # The same validation as a live question: the choice must be one of its options.
        probe = Decision(
            id=saved_one.id,
            kind=saved_one.kind,
            question=saved_one.question,
            options=saved_one.options,
            allow_text=saved_one.allow_text,
        )
        chosen = Decisions.pick(probe, picked, rest)
        memory.answer_saved(session, decision_id, Answer(choice=chosen, text=rest, args=args))
        return (
            f"planbook: {decision_id} -> {chosen} (recorded: `%plan continue` resumes the "
            "agent with this answer)"
        )
    state = state_of(session)
    state.step_question_report = None
    answer = decisions.answer(decision_id, picked, text=rest, args=args)
    report, state.step_question_report = state.step_question_report, None
    if report is not None:
        return f"planbook: {decision_id} -> {answer.choice}; the steps held back ran:\n{report}"
    return f"planbook: {decision_id} -> {answer.choice}"


def _open_decisions(
    session: Session,
    live: list[Decision],
    waiting: list[SavedDecision],
    asked: list[PersonQuestion],
) -> str:
    """What ``%answer`` alone lists: the agent's open decisions (those of the run, or those
    its last run left in the notebook) and the questions MCP clients asked."""
    lines = [f"{d.id}: {d.question} [{' / '.join(d.options) or 'free text'}]" for d in live]
    lines += [
        f"{d.id}: {d.question} [{' / '.join(d.options) or 'free text'}] "
        "(asked before the kernel restarted)"
        for d in ([] if live else waiting)
    ]
    lines += [question_line(q, session.answered_here) for q in asked]
    return "\n".join(lines) if lines else "planbook: no open decision"


def _running(session: Session) -> bool:
    return state_of(session).running()


def continue_plan(session: Session, *, show: bool = True) -> AgentRun:
    """``%plan continue``: resume the agent's last run where it stopped."""
    from planbook.agent.run import continue_task  # heavy: the agent (not on `%load_ext planbook`)

    run = continue_task(session)
    state_of(session).reviser = lambda feedback: revise_plan(session, feedback)
    if show:
        LiveView(run).show()
    return run


def conversation_text(session: Session, *, lines: int = 8) -> str | None:
    """What ``%plan`` adds about the agent: an interrupted run, todos, open questions and the
    latest activity, from the notebook (so it shows after a restart too). None: nothing."""
    if _running(session):
        return None  # the live output under the %plan cell shows it
    conversation = memory.saved(session)
    if conversation is None or not (conversation.messages or conversation.activity):
        return None
    out = [f"agent conversation: {conversation.task or '(no task)'} · {conversation.status}"]
    if conversation.status == "running":
        out[0] = out[0].replace("· running", "· interrupted")
        out.append("  the run was cut off (kernel restart?): `%plan continue` resumes it")
    for todo in todos_of(session).views(session.current_plan()):
        out.append(f"  [{todo.status}] {todo.content}")
    for decision in conversation.open_decisions():
        out.append(
            f"  waiting for you ({decision.id}): {decision.question} -> "
            f"%answer {decision.id} <{' / '.join(decision.options) or 'text'}>"
        )
    for decision in memory.answered_elsewhere(session, conversation):
        out.append(
            f"  recorded elsewhere ({decision.id}): {decision.question} -> {decision.answer}; "
            "not acted on here: `%plan continue` asks it again"
        )
    for line in conversation.activity[-lines:]:
        out.append(f"  {view.ICONS.get(line.type, '-')} {line.message}")
    return "\n".join(out)


def rules_text(session: Session) -> str:
    """``%plan rules``: every permission rule, numbered, with where it comes from."""
    views = rule_views(session)
    if not views:
        return (
            "planbook: no permission rules; the mode decides. Answer a question with "
            '"always allow ..." to add one, or edit planbook.toml'
        )
    lines = ["permission rules (the last match wins; `%plan rules revoke N` removes one):"]
    for v in views:
        lines.append(f"{v.number:>3}. {v.action:<5} {v.tool} {v.pattern}   ({v.source})")
    lines.append(
        "rules never let a change skip the plan in plan mode, nor touch planbook.toml, "
        "pyproject.toml or .git without review"
    )
    return "\n".join(lines)


def revoke_rule(session: Session, number: int) -> str:
    """``%plan rules revoke N``."""
    rule = revoke(session, number)
    return f"planbook: revoked rule {number} ({rule.action} {rule.tool} {rule.pattern})"


def _offer_questions(session: Session) -> None:
    decisions_of(session)


def register(ipython: Any) -> None:
    """Add the agent's magics and configurable to an IPython shell."""
    # heavy: IPython
    from IPython.core.error import UsageError

    add_configurable(ipython)

    def plan_cell(line: str, cell: str) -> None:
        """%%plan: the cell's text is the task for the agent (it runs in the background)."""
        task = (line + "\n" + cell).strip()
        try:
            start_plan(kernel_session(), task)
        except PlanbookError as exc:
            raise UsageError(visible(str(exc))) from None

    def answer(line: str) -> None:
        """%answer [id choice [reason]]: answer a question the agent is waiting on."""
        try:
            say(answer_line(kernel_session(), line))
        except PlanbookError as exc:
            raise UsageError(visible(str(exc))) from None

    with suppress(PlanbookError):  # magics.register says in one line why no session opens
        decisions_of(api.session())  # the panel offers the questions steps wait on
    api.follow_kernel_session(_offer_questions)  # ...and so does every later kernel session
    ipython.register_magic_function(plan_cell, magic_kind="cell", magic_name="plan")
    ipython.register_magic_function(answer, magic_kind="line", magic_name="answer")
