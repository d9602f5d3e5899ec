"""Summaries instead of cuts: past a share of the context the model summarises older turns (the
mechanical pruning only when it cannot), and the plan travels as what changed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import planbook
from planbook.agent.context import config_of
from planbook.agent.history import SUMMARY_HEAD, SUMMARY_MARK
from planbook.agent.run import plan_task
from planbook.agent.state import state_of
from planbook.agents import Scripted
from tests.agent.conftest import make_session
from tests.support.openai_server import Reply, ScriptedOpenAI

pytestmark = pytest.mark.anyio


def prompts(messages: list[ModelMessage]) -> str:
    return "\n".join(
        str(p.content)
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, UserPromptPart)
    )


def big_session(tmp_path: Path) -> planbook.Session:
    (tmp_path / "big.txt").write_text("".join(f"row {i} of the data\n" for i in range(5000)))
    session = make_session(tmp_path)
    config_of(session).context_tokens = 4000  # summarise past 8,000 characters
    return session


READS = [
    ("insert_cell", {"source": "x = 1", "reason": "the step to keep"}),
    *[("read_file", {"path": "big.txt", "offset": i * 400}) for i in range(4)],
]


async def test_older_turns_are_summarised_by_the_model(tmp_path: Path) -> None:
    session = big_session(tmp_path)
    sent: list[list[ModelMessage]] = []
    inner = Scripted(READS).to_model().function
    assert inner is not None

    async def spy(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        sent.append(list(messages))
        return await inner(messages, info)

    run = await plan_task(session, "look at the data", model=FunctionModel(spy))
    assert run.status == "finished", run.error
    summaries = [m for m in sent if SUMMARY_MARK in prompts(m)]
    assert summaries, "the model was never asked to summarise"
    assert any("context: summarised" in a.message for a in run.activity)
    assert not any("pruned" in a.message for a in run.activity)
    after = sent[sent.index(summaries[0]) + 1]
    text = prompts(after)
    assert SUMMARY_HEAD in text and "made" in text  # the scripted model's summary
    assert "step 1 [pending]" in text and "the step to keep" in text  # the plan, whole
    # The newest turn is always kept whole; by the next summary the first read is gone.
    assert "row 0 of the data" in str(after)
    assert len(summaries) >= 2
    later = sent[sent.index(summaries[1]) + 1]
    assert "row 0 of the data" not in str(later) and SUMMARY_HEAD in prompts(later)


async def test_a_model_that_cannot_summarise_falls_back_to_pruning(tmp_path: Path) -> None:
    session = big_session(tmp_path)
    inner = Scripted(READS).to_model().function
    assert inner is not None

    async def refuses(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if SUMMARY_MARK in prompts(messages[-1:]):
            raise RuntimeError("no summaries here")
        return await inner(messages, info)

    run = await plan_task(session, "look", model=FunctionModel(refuses))
    assert run.status == "finished", run.error
    lines = [a.message for a in run.activity]
    assert any("could not summarise (RuntimeError: no summaries here)" in x for x in lines)
    assert any("pruned old tool outputs" in x for x in lines)


async def test_the_plan_is_sent_as_what_changed(tmp_path: Path) -> None:
    session = make_session(tmp_path)
    (tmp_path / "a.txt").write_text("a\n")
    seen: list[str] = []
    calls = [
        ("insert_cell", {"source": "x = 1", "reason": "first"}),
        ("read_file", {"path": "a.txt"}),
        ("insert_cell", {"source": "y = 2", "reason": "second"}),
        ("read_plan", {}),
    ]
    inner = Scripted(calls).to_model().function
    assert inner is not None

    async def spy(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info.instructions or "")
        return await inner(messages, info)

    run = await plan_task(session, "x", model=FunctionModel(spy))
    assert run.status == "finished", run.error
    assert "(no steps staged yet)" in seen[0]
    assert "+ step 1 [pending]" in seen[1] and "first" in seen[1]
    assert "no change since your last request" in seen[2]
    assert "+ step 2 [pending]" in seen[3] and "step 1" not in seen[3]
    # read_plan answers with the whole plan
    assert "step 1 [pending]" in state_of(run.session).history[-2].parts[0].content


@pytest.fixture
def _loopback_allowed() -> Iterator[None]:
    import pydantic_ai.models

    pydantic_ai.models.ALLOW_MODEL_REQUESTS = True  # only ever the loopback server
    yield


@pytest.mark.usefixtures("_loopback_allowed")
async def test_summary_over_http(tmp_path: Path) -> None:
    session = big_session(tmp_path)
    config_of(session).stream = False
    replies = [
        Reply(tool_calls=[("read_file", {"path": "big.txt"})]),
        Reply(content="SUMMARY: the person wants big.txt looked at; it has 5000 rows."),
        Reply(content="Looked at it."),
    ]
    with ScriptedOpenAI(replies) as api:
        config_of(session).model = api.model()
        run = await plan_task(session, "look at big.txt")
    assert run.status == "finished", run.error
    assert len(api.requests) == 3
    asked = api.requests[1]["messages"]
    assert SUMMARY_MARK in asked[-1]["content"] and "tools" not in api.requests[1]
    after = " ".join(str(m.get("content")) for m in api.requests[2]["messages"])
    assert "SUMMARY: the person wants big.txt looked at" in after
    assert "Task from the person" not in after  # summarised away
    assert any("context: summarised" in a.message for a in run.activity)
