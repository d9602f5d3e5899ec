"""The agent's objects of one session, in one typed place: ``state_of(session)``.

The Session knows nothing of the agent: it carries this state for it (``Session.attached``), so
the state lives and goes with the session. Surfaces that show or drive the agent (the panel, the
magics) read it here. Light to import: pydantic-ai is never imported by this module.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from planbook.agent.config import AgentConfig
from planbook.agent.decisions import Decisions
from planbook.agent.todos import TodoList
from planbook.engine.executor.report import RunReport
from planbook.sessions.session import Session

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage  # heavy: pydantic-ai, for the type only


class Run(Protocol):
    """What the state and the surfaces need of a run (``planbook.agent.run.AgentRun``)."""

    def done(self) -> bool: ...

    def stop(self) -> None: ...

    def __await__(self) -> Generator[Any, None, Any]: ...


@dataclass
class AgentState:
    """Each field is None until the agent (or a surface driving it) first needs it."""

    #: The agent's settings (``%config Planbook.x``; made by ``context.config_of``).
    config: AgentConfig | None = None
    #: The latest run (``AgentRun``): awaited, stopped, shown by the panel while it runs.
    run: Run | None = None
    #: The messages of the conversation so far in this kernel: a revision or ``%plan
    #: continue`` goes on from them; a new task starts without (None).
    history: list[ModelMessage] | None = None
    #: The questions waiting for the person (made by ``context.decisions_of``).
    decisions: Decisions | None = None
    #: The agent's todo list (made by ``context.todos_of``, from the one the notebook saved).
    todos: TodoList | None = None
    #: The namespace ``inspect_variable`` reads instead of the kernel's (tests, embedding).
    user_ns: Mapping[str, Any] | None = None
    #: How ``%plan revise`` and the panel's Revise have the agent draft the next revision:
    #: set once the agent planned a task here (a surface showing live output sets its own).
    reviser: Callable[[str], object] | None = None
    #: How the steps held back by a step's question ran once it was answered, for the surface
    #: that took the answer to say (``planbook.agent.step_questions``).
    step_question_report: RunReport | None = None

    def running(self) -> bool:
        """Is a run of the agent under way?"""
        return self.run is not None and not self.run.done()


def state_of(session: Session) -> AgentState:
    """The agent's state of ``session``, made on first use."""
    return session.attached(AgentState)
