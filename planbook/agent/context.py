"""What every agent tool receives: the session and the per-session agent objects.

The agent layer keeps its objects in ``session.extras`` (the core's extension point), so the
core never imports the agent: the decision registry, the permission rules (which also become the
session's ``rule_for`` hook, so the Python API and magics honour them too) and the todo list.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from planbook.agent.decisions import Decisions
from planbook.engine.doom_loop import DoomLoopGuard
from planbook.engine.rules import RuleSet

if TYPE_CHECKING:
    from planbook.agent.config import AgentConfig
    from planbook.agent.todos import TodoList
    from planbook.session import Session

_log = logging.getLogger(__name__)

ActivityType = Literal["status", "tool", "thinking", "text", "staged", "decision", "error"]


class Activity(BaseModel):
    """One line of what the agent is doing, for the panel and the %plan output."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: ActivityType
    message: str = Field(description="One line, ready to show.")
    data: dict[str, Any] = Field(default_factory=dict)


def decisions_of(session: Session) -> Decisions:
    decisions = session.extras.get("decisions")
    if not isinstance(decisions, Decisions):
        decisions = Decisions()
        session.extras["decisions"] = decisions
        _bridge_decisions(session, decisions)
    return decisions


def _bridge_decisions(session: Session, decisions: Decisions) -> None:
    """Tell the session's observers (the panel) about open and settled decisions."""
    from planbook.events import Event

    def forward(what: str, decision: Any) -> None:
        kind: Literal["decision_needed", "decision_made"] = (
            "decision_needed" if what == "asked" else "decision_made"
        )
        session.events.emit(
            Event(kind=kind, message=decision.question, status=what, data=decision.model_dump())
        )

    decisions.subscribe(forward)


def rules_of(session: Session) -> RuleSet:
    """The project's rules, installed as the session's ``rule_for`` hook (see rules.install)."""
    from planbook.engine.rules import install

    return install(session)


def todos_of(session: Session) -> TodoList:
    from planbook.agent.todos import TodoList

    todos = session.extras.get("todos")
    if not isinstance(todos, TodoList):
        todos = TodoList()
        session.extras["todos"] = todos
    return todos


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

    def say(self, type: ActivityType, message: str, **data: Any) -> None:
        try:
            self.emit(Activity(type=type, message=message, data=data))
        except Exception:
            _log.exception("planbook: an activity listener failed")

    async def decide(self, question: str, options: list[str], **kw: Any) -> Any:
        """Ask the person (or take the next scripted answer) and wait for the answer."""
        from planbook.agent.decisions import Answer

        if self.auto_answers:
            choice = self.auto_answers.pop(0)
            self.say("decision", f"{question} -> {choice} (scripted answer)")
            return Answer(choice=choice)
        future = self.decisions.ask(question, options, **kw)
        self.say(
            "decision",
            f"waiting for you: {question} ({' / '.join(options) or 'text'})",
            decision_id=self._last_id(),
        )
        answer = await future
        self.say("decision", f"{question} -> {answer.choice}")
        return answer

    def _last_id(self) -> str | None:
        pending = self.decisions.pending()
        return pending[-1].id if pending else None
