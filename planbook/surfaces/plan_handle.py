"""``pb.plan``: the current plan, shown as markdown in Jupyter, and callable with a task
(``await pb.plan("...")``) to have the agent draft one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from planbook.errors import UsageMistake
from planbook.sessions import arguments
from planbook.sessions.session import Session

if TYPE_CHECKING:
    from planbook.agent.run import AgentRun  # heavy: the agent, loaded when first asked


class PlanHandle:
    def __init__(self, session: Session) -> None:
        self._session = session

    def __getattr__(self, name: str) -> Any:
        plan = self._session.current_plan()
        if plan is None:
            raise UsageMistake("there is no plan yet: stage a step with `%%propose` first")
        return getattr(plan, name)

    def __bool__(self) -> bool:
        return self._session.current_plan() is not None

    def __call__(self, task: str, *, model: Any = None) -> AgentRun:
        """Ask the configured agent (or ``model``) to plan ``task``; returns an awaitable run."""
        arguments.text(task, "task")  # before the agent loads for nothing
        # heavy: the agent loads when first asked, not with `%load_ext planbook` (issue 10)
        from planbook.agent.run import plan_task

        return plan_task(self._session, task, model=model)

    def _repr_markdown_(self) -> str:
        return self._session.render_markdown()

    def __repr__(self) -> str:
        return self._session.render_text()
