"""What every agent tool receives: the session and the per-session agent objects.

The objects live in the agent's state of the session (``planbook.agent.state``; the core never
imports the agent), made here on first use: the settings, the decision registry and the todo
list. The permission rules are the Session's own (``session.rules``), so the Python API, the
magics and the agent see the same.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from planbook.agent.activity import Activity, ActivityType
from planbook.agent.config import AgentConfig, new_config
from planbook.agent.decisions import Answer, Decision, Decisions
from planbook.agent.memory import Keeper
from planbook.agent.state import state_of
from planbook.agent.step_questions import offer as offer_step_questions
from planbook.agent.todos import TodoList
from planbook.engine.doom_loop import DoomLoopGuard
from planbook.engine.rules.matching import RuleSet
from planbook.engine.stored_record import conversation_of
from planbook.model.events import Event
from planbook.sessions.session import Session

_log = logging.getLogger(__name__)


def config_of(session: Session) -> AgentConfig:
    """The session's agent config, made on first use."""
    state = state_of(session)
    if state.config is None:
        state.config = new_config()
    return state.config


def decisions_of(session: Session) -> Decisions:
    """The session's open questions (the agent's, and those steps wait on), made on first use;
    the registry's events reach the session's observers."""
    state = state_of(session)
    if state.decisions is None:
        # Ids go on from those a previous kernel saved, so `d3` always means one question.
        conversation = conversation_of(session.store.state)
        used = [d.id for d in conversation.decisions] if conversation else []
        numbers = [int(i[1:]) for i in used if i[1:].isdigit()]
        state.decisions = Decisions(first=max(numbers, default=0) + 1)
        _bridge_decisions(session, state.decisions)
        offer_step_questions(session, state.decisions)
    return state.decisions


def _bridge_decisions(session: Session, decisions: Decisions) -> None:
    """Tell the session's observers (the panel) about open and settled decisions."""

    def forward(what: str, decision: Decision) -> None:
        kind: Literal["decision_needed", "decision_made"] = (
            "decision_needed" if what == "asked" else "decision_made"
        )
        session.events.emit(
            Event(kind=kind, message=decision.question, status=what, data=decision.model_dump())
        )

    decisions.subscribe(forward)


def todos_of(session: Session) -> TodoList:
    """The agent's todo list, made on first use from the one a previous kernel saved."""
    state = state_of(session)
    if state.todos is None:
        state.todos = TodoList()
        conversation = conversation_of(session.store.state)
        if conversation is not None:
            state.todos.replace(conversation.todos)
    return state.todos


@dataclass
class AgentDeps:
    """The dependencies of one agent run (pydantic-ai's ``RunContext.deps``)."""

    session: Session
    config: AgentConfig
    decisions: Decisions
    rules: RuleSet
    guard: DoomLoopGuard
    emit: Callable[[Activity], None]
    #: Answers given in order to decisions, instead of asking the person (scripted demos).
    auto_answers: list[str] = field(default_factory=list)
    #: Set when the person chose "stop" at a decision.
    stop_requested: bool = False
    #: Writes the conversation into the notebook as the run goes (None: not remembered).
    keeper: Keeper | None = None
    #: Answers given after an earlier run ended, by the id of the tool call that asked.
    recorded: dict[str, Answer] = field(default_factory=dict)
    #: The plan's lines as the model last saw them (None: send the whole plan next time).
    plan_seen: dict[str, str] | None = None

    def say(self, type: ActivityType, message: str, **data: Any) -> None:
        try:
            self.emit(Activity(type=type, message=message, data=data))
        except Exception:
            _log.exception("planbook: an activity listener failed")

    async def decide(
        self, question: str, options: list[str], *, call_id: str | None = None, **kw: Any
    ) -> Any:
        """Ask the person (or take the next scripted answer) and wait for the answer.

        ``call_id`` names the tool call asking: an answer given to it after an earlier run
        ended (saved in the notebook) is taken at once when the run is continued."""
        if call_id is not None and call_id in self.recorded:
            answer = self.recorded.pop(call_id)
            self.say("decision", f"{question} -> {answer.choice} (answered earlier)")
            return answer
        if self.auto_answers:
            choice = self.auto_answers.pop(0)
            self.say("decision", f"{question} -> {choice} (scripted answer)")
            return Answer(choice=choice)
        future = self.decisions.ask(question, options, **kw)
        decision_id = self._last_id()
        if self.keeper is not None and decision_id is not None:
            asked = next(d for d in self.decisions.pending() if d.id == decision_id)
            self.keeper.asked(asked, call_id)
        self.say(
            "decision",
            f"waiting for you: {question} ({' / '.join(options) or 'text'})",
            decision_id=decision_id,
        )
        try:
            answer = await future
        finally:
            if self.keeper is not None and decision_id is not None:
                self.keeper.settled(decision_id)
        self.say("decision", f"{question} -> {answer.choice}")
        return answer

    def _last_id(self) -> str | None:
        pending = self.decisions.pending()
        return pending[-1].id if pending else None
