"""Revisions through the agent, todos linked to steps, and streamed thinking."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import (
    AgentInfo,
    DeltaThinkingCalls,
    DeltaThinkingPart,
    DeltaToolCall,
    DeltaToolCalls,
    FunctionModel,
)

import planbook
from planbook.agent.context import todos_of
from planbook.agent.run import plan_task, revise_task
from planbook.agents import Scripted
from planbook.model.events import Event

pytestmark = pytest.mark.anyio

FIRST = Scripted(
    [
        ("insert_cell", {"source": "df.plot.line()", "reason": "plot revenue"}),
        ("present_plan", {"summary": "A line chart."}),
    ]
)


async def test_revise_keeps_the_earlier_revision_and_continues_the_conversation(
    session: planbook.Session,
) -> None:
    await plan_task(session, "plot revenue", model=FIRST)
    seen: list[list[ModelMessage]] = []
    second = Scripted(
        [
            ("withdraw_step", {"step_number": 1, "reason": "line chart not wanted"}),
            ("insert_cell", {"source": "df.plot.bar()", "reason": "bar chart"}),
            ("withdraw_step", {"step_number": 1, "reason": "line chart not wanted"}),
            ("present_plan", {"summary": "A bar chart."}),
        ]
    ).to_model()
    inner = second.function
    assert inner is not None

    async def spy(messages: list[ModelMessage], info: AgentInfo) -> Any:
        seen.append(list(messages))
        return await inner(messages, info)

    second.function = spy
    run = await revise_task(session, "use a bar chart instead", model=second)
    assert run.status == "finished", run.error
    plan = session.current_plan()
    assert plan is not None and plan.current.number == 2
    assert plan.revision(1).summary == "A line chart."
    assert [s.operation.source for s in plan.revision(1).steps] == ["df.plot.line()"]  # type: ignore[union-attr]
    assert [(s.status, s.operation.source) for s in plan.steps] == [  # type: ignore[union-attr]
        ("rejected", "df.plot.line()"),
        ("pending", "df.plot.bar()"),
    ]
    assert plan.current.summary == "A bar chart." and plan.state == "awaiting_approval"
    # withdrawing the last open step was refused (it would close the plan), then it worked
    assert sum(1 for a in run.activity if a.message.startswith("step 1 withdrawn")) == 1
    # the first run's conversation came along, with the feedback as the new prompt
    text = json.dumps([str(m) for m in seen[0]])
    assert "plot revenue" in text and "use a bar chart instead" in text


async def test_todos_link_to_steps_and_follow_their_status(session: planbook.Session) -> None:
    events: list[Event] = []
    session.subscribe(events.append)
    # the agent links the todo to the step id the write tool answered with
    link = {"todos": [{"content": "write a", "status": "in_progress", "step_ids": ["$step"]}]}
    write = {"path": "a.txt", "content": "a", "reason": "a"}
    run = await plan_task(
        session, "x", model=Scripted([("write_file", write), ("todo_write", link)])
    )
    assert run.status == "finished", run.error
    [view] = todos_of(session).views(session.current_plan())
    assert (view.status, view.step_numbers) == ("staged", [1])
    session.approve()
    [view] = todos_of(session).views(session.current_plan())
    assert view.status == "done"
    changed = [e for e in events if e.kind == "todos_changed"]
    assert changed and changed[0].data["todos"][0]["content"] == "write a"
    assert any(e.kind == "agent_activity" and e.data["type"] == "tool" for e in events)


async def test_streamed_thinking_shows_in_the_activity(session: planbook.Session) -> None:
    turns = iter([1, 2])

    async def stream(
        messages: list[ModelMessage], info: AgentInfo
    ) -> AsyncIterator[DeltaThinkingCalls | DeltaToolCalls | str]:
        if next(turns) == 1:
            yield {0: DeltaThinkingPart(content="The frame has empty rows; ")}
            yield {0: DeltaThinkingPart(content="drop them first.")}
            yield {1: DeltaToolCall(name="list_cells", json_args="{}", tool_call_id="t1")}
        else:
            yield "Nothing to change."

    run = await plan_task(session, "x", model=FunctionModel(stream_function=stream))
    assert run.status == "finished", run.error
    thinking = [a.message for a in run.activity if a.type == "thinking"]
    assert thinking == ["The frame has empty rows; drop them first."]
    assert [a.message for a in run.activity if a.type == "tool"] == ["list_cells"]
    assert run.output == "Nothing to change."
