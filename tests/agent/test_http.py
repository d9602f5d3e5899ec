"""The real HTTP path: pydantic-ai's OpenAI client against a scripted server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import planbook
from planbook.agent.context import config_of
from planbook.agent.run import plan_task
from tests.support.openai_server import Reply, ScriptedOpenAI

pytestmark = pytest.mark.anyio

PLAN = [
    Reply(tool_calls=[("list_cells", {})], reasoning="First I look at the cells."),
    Reply(
        tool_calls=[
            (
                "insert_cell",
                {"source": "df = df.dropna()", "after": "load", "reason": "drop empty rows"},
            )
        ]
    ),
    Reply(tool_calls=[("present_plan", {"summary": "Drop empty rows."})]),
    Reply(content="The plan is ready for your review."),
]


@pytest.fixture(autouse=True)
def _loopback_allowed() -> Iterator[None]:
    import pydantic_ai.models

    pydantic_ai.models.ALLOW_MODEL_REQUESTS = True  # only ever the loopback server below
    yield


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streaming"])
async def test_agent_plans_over_http(session: planbook.Session, stream: bool) -> None:
    config_of(session).stream = stream
    with ScriptedOpenAI(list(PLAN)) as api:
        config_of(session).model = api.model()
        run = await plan_task(session, "clean the frame")
    assert run.status == "finished", run.error
    assert [r.get("stream", False) for r in api.requests] == [stream] * 4
    tools = {t["function"]["name"] for t in api.requests[0]["tools"]}
    assert {"list_cells", "insert_cell", "present_plan", "ask_user", "todo_write"} <= tools
    # the tool's answer travelled back to the model
    assert "id=load" in api.requests[1]["messages"][-1]["content"]
    assert "NOT applied" in api.requests[2]["messages"][-1]["content"]
    plan = session.current_plan()
    assert plan is not None and plan.state == "awaiting_approval"
    assert [s.operation.kind for s in plan.steps] == ["insert_cell"]
    assert [c.source for c in session.cells()][-1] == "df.head()"  # not applied
    assert any(a.type == "text" and "ready for your review" in a.message for a in run.activity)
    thinking = [a.message for a in run.activity if a.type == "thinking"]
    assert thinking == ["First I look at the cells."]


async def test_rate_limit_is_retried(session: planbook.Session) -> None:
    with ScriptedOpenAI([Reply(status=429, error="slow down"), *PLAN]) as api:
        config_of(session).model = api.model()
        run = await plan_task(session, "clean the frame")
    assert run.status == "finished", run.error
    assert len(api.requests) == 5


async def test_a_timed_out_request_is_retried(session: planbook.Session) -> None:
    config_of(session).request_timeout = 0.5
    with ScriptedOpenAI([Reply(content="too late", delay=3), *PLAN]) as api:
        config_of(session).model = api.model()
        run = await plan_task(session, "clean the frame")
    assert run.status == "finished", run.error
    assert len(api.requests) == 5
    assert not any("too late" in a.message for a in run.activity)


async def test_server_errors_end_in_one_line_and_keep_the_plan(session: planbook.Session) -> None:
    config_of(session).provider_retries = 2
    replies = [PLAN[1], *[Reply(status=500, error="upstream exploded")] * 3]
    with ScriptedOpenAI(replies) as api:
        config_of(session).model = api.model()
        run = await plan_task(session, "clean the frame")
    assert run.status == "failed"
    assert run.error is not None and "\n" not in run.error
    assert "HTTP 500" in run.error and "upstream exploded" in run.error
    assert "plan staged so far is kept" in run.error
    plan = session.current_plan()
    assert plan is not None and len(plan.steps) == 1


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streaming"])
async def test_malformed_arguments_over_http_never_reach_the_plan(
    session: planbook.Session, stream: bool
) -> None:
    config_of(session).stream = stream
    replies = [
        Reply(tool_calls=[("insert_cell", '{"source": "x = 1", "reason": ')]),  # broken JSON
        Reply(tool_calls=[("edit_cell", {"cell_id": "show"})]),  # missing fields
        Reply(
            tool_calls=[
                ("edit_cell", {"cell_id": "show", "source": "df.tail()", "reason": "see the end"})
            ]
        ),
        Reply(content="done"),
    ]
    with ScriptedOpenAI(replies) as api:
        config_of(session).model = api.model()
        run = await plan_task(session, "x")
    assert run.status == "finished", run.error
    plan = session.current_plan()
    assert plan is not None and [s.operation.kind for s in plan.steps] == ["edit_cell"]
    assert "json" in api.requests[1]["messages"][-1]["content"].lower()
    assert "missing" in api.requests[2]["messages"][-1]["content"].lower()


async def test_provider_retries_show_one_line_each(session: planbook.Session) -> None:
    import logging

    from planbook.agent.run import ProviderRetries

    client_log = logging.getLogger("openai._base_client")
    before = client_log.level
    replies = [Reply(status=429, error="slow down"), Reply(status=500), *PLAN]
    with ScriptedOpenAI(replies) as api:
        config_of(session).model = api.model()
        run = await plan_task(session, "clean the frame")
    assert run.status == "finished", run.error
    retries = [a.message for a in run.activity if a.message.startswith("provider: retrying")]
    assert len(retries) == 2, retries
    assert all("\n" not in r for r in retries)
    # the client's logger is as it was: nothing new reaches the person's log handlers
    assert client_log.level == before
    assert not any(isinstance(f, ProviderRetries) for f in client_log.filters)
