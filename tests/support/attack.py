"""What the attack tests share: the agent's tools called as a model would call them.

``tool_context`` gives the RunContext the agent's tools receive, bound to a real Session (its
rules, decisions and doom-loop guard as an agent run would set them up), with pydantic-ai's
TestModel: no model is asked anything, the tools run for real.
"""

from __future__ import annotations

from pydantic_ai import RunContext
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage

from planbook.agent.config import AgentConfig
from planbook.agent.context import AgentDeps, decisions_of
from planbook.engine.doom_loop import DoomLoopGuard
from planbook.sessions.session import Session


def tool_context(session: Session) -> RunContext[AgentDeps]:
    """The context a tool call of an agent run on ``session`` gets."""
    deps = AgentDeps(
        session=session,
        config=AgentConfig(),
        decisions=decisions_of(session),
        rules=session.rules.current(),
        guard=DoomLoopGuard(limit=3),
        emit=lambda activity: None,
    )
    return RunContext(deps=deps, model=TestModel(), usage=RunUsage())
