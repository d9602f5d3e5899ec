"""The agent's todo list, each todo linked to the plan steps that carry it out.

The agent writes the list (``todo_write``); the status the panel shows is derived from the linked
steps as they are approved and run, so a todo is "done" when its steps are done, whatever the
agent last said.
"""

from __future__ import annotations

from typing import Literal

from planbook.model.base import PlanbookModel
from planbook.model.conversation import Todo, TodoStatus
from planbook.model.plan import Plan

__all__ = ["Todo", "TodoList", "TodoView"]

ShownStatus = Literal["pending", "in_progress", "staged", "approved", "done", "failed", "cancelled"]


class TodoView(PlanbookModel):
    content: str
    status: ShownStatus
    step_ids: list[str]
    step_numbers: list[int]


class TodoList:
    def __init__(self) -> None:
        self.todos: list[Todo] = []

    def replace(self, todos: list[Todo]) -> None:
        self.todos = list(todos)

    def views(self, plan: Plan | None) -> list[TodoView]:
        numbers = {s.id: n for n, s in enumerate(plan.steps, start=1)} if plan else {}
        statuses = {s.id: s.status for s in plan.steps} if plan else {}
        out = []
        for todo in self.todos:
            linked: list[str] = [statuses[i] for i in todo.step_ids if i in statuses]
            out.append(
                TodoView(
                    content=todo.content,
                    status=_shown(todo.status, linked),
                    step_ids=list(todo.step_ids),
                    step_numbers=[numbers[i] for i in todo.step_ids if i in numbers],
                )
            )
        return out


def _shown(said: TodoStatus, linked: list[str]) -> ShownStatus:
    if said == "cancelled" or not linked:
        return said
    if any(s in ("failed", "conflict") for s in linked):
        return "failed"
    settled = [s for s in linked if s not in ("rejected", "skipped")]
    if settled and all(s == "done" for s in settled):
        return "done"
    if any(s in ("approved", "running", "done") for s in settled):
        return "approved"
    return "staged"
