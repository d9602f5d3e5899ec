"""``session.plan``: the current plan, shown as markdown in Jupyter, and callable with a task
(``await session.plan("...")``) to have the agent draft one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from planbook.errors import UsageMistake

if TYPE_CHECKING:
    from planbook.sessions.session import Session


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

    def __call__(self, task: str, **options: Any) -> Any:
        """Ask the configured agent to plan ``task``; returns an awaitable run."""
        from planbook.agent.run import plan_task  # type: ignore[import-not-found,unused-ignore]

        return plan_task(self._session, task, **options)

    def _repr_markdown_(self) -> str:
        return self._session.render_markdown()

    def __repr__(self) -> str:
        return self._session.render_text()
