"""What every agent tool receives: the session and the per-session agent objects.

Those objects live in ``planbook.agent.state`` (the core never imports the agent); the
permission rules also become the session's ``rule_for`` hook, so the Python API and magics
honour them too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from planbook.agent.activity import Activity, ActivityType
from planbook.agent.config import AgentConfig
from planbook.agent.decisions import Answer, Decisions
from planbook.agent.memory import Keeper
from planbook.engine.doom_loop import DoomLoopGuard
from planbook.engine.rules.matching import RuleSet, install
from planbook.sessions.session import Session

_log = logging.getLogger(__name__)


def rules_of(session: Session) -> RuleSet:
    """The project's rules, installed as the session's ``rule_for`` hook (see rules.install)."""
    return install(session)


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
