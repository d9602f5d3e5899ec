"""The doom-loop guard, permission rules, and pruning, as the agent meets them."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart

import planbook
from planbook.agent.context import decisions_of
from planbook.agent.history import history_size, prune
from planbook.agent.run import plan_task
from planbook.agent.state import state_of
from planbook.agents import Scripted
from tests.agent.conftest import make_session, next_decision
from tests.support.rules import own_rules

pytestmark = pytest.mark.anyio

READ = ("read_file", {"path": "notes.txt"})


def returns(session: planbook.Session, tool: str) -> list[str]:
    return [
        str(p.content)
        for m in state_of(session).history
        for p in m.parts
        if type(p).__name__ == "ToolReturnPart" and getattr(p, "tool_name", None) == tool
    ]


async def test_third_identical_call_is_not_executed_and_the_person_is_asked(
    session: planbook.Session,
) -> None:
    run = plan_task(session, "x", model=Scripted([READ, READ, READ, ("list_cells", {})]))
    decision = await next_decision(session)
    assert decision.kind == "doom_loop" and decision.options == ["continue", "stop"]
    decisions_of(session).answer(decision.id, "continue")
    await run
    first, second, third = returns(session, "read_file")
    assert "hello" in first and "hello" in second
    assert third.startswith("Not executed") and "Change course" in third
    assert run.status == "finished"


async def test_stop_at_a_doom_loop_ends_the_run(session: planbook.Session) -> None:
    staged = ("insert_cell", {"source": "x = 1", "reason": "keep me"})
    run = plan_task(session, "x", model=Scripted([staged, READ, READ, READ, ("list_cells", {})]))
    decision = await next_decision(session)
    decisions_of(session).answer(decision.id, "stop")
    await run
    assert run.status == "stopped"
    plan = session.current_plan()
    assert plan is not None and len(plan.steps) == 1  # the staged plan is kept


def project(tmp_path: Path, rules: str) -> planbook.Session:
    own_rules(tmp_path / "pyproject.toml", "[project]\nname = 'x'\n\n" + rules)
    (tmp_path / "notes.txt").write_text("hello\n")
    return make_session(tmp_path)


async def test_deny_rule_refuses_in_any_mode(tmp_path: Path) -> None:
    session = project(
        tmp_path, '[tool.planbook.permissions]\nwrite_file = { "secrets/*" = "deny" }\n'
    )
    session.set_mode("act")
    await plan_task(
        session,
        "x",
        model=Scripted(
            [
                ("write_file", {"path": "secrets/key", "content": "x", "reason": "a"}),
                ("write_file", {"path": "ok.txt", "content": "x", "reason": "b"}),
            ]
        ),
    )
    first, second = returns(session, "write_file")
    assert first.startswith("Refused by a permission rule")
    assert not (tmp_path / "secrets").exists()
    assert second.startswith("Applied") and (tmp_path / "ok.txt").exists()


async def test_allow_rule_skips_the_question_in_ask_mode(tmp_path: Path) -> None:
    session = project(tmp_path, '[tool.planbook.permissions]\nwrite_file = { "out/*" = "allow" }\n')
    session.set_mode("ask")
    run = await plan_task(
        session,
        "x",
        model=Scripted(
            [
                ("write_file", {"path": "out/a.txt", "content": "x", "reason": "a"}),
            ]
        ),
    )
    assert run.status == "finished" and (tmp_path / "out" / "a.txt").exists()


async def test_ask_rule_asks_even_in_act_mode(tmp_path: Path) -> None:
    session = project(tmp_path, '[tool.planbook.permissions]\nshell = { "git *" = "ask" }\n')
    session.set_mode("act")
    run = plan_task(
        session,
        "x",
        model=Scripted(
            [
                ("shell", {"command": "git init -q", "reason": "a"}),
            ]
        ),
    )
    decision = await next_decision(session)
    assert "git init" in decision.question
    assert not (tmp_path / ".git").exists()
    decisions_of(session).answer(decision.id, "deny", text="not now")
    await run


async def test_rules_also_hold_for_the_python_api(tmp_path: Path) -> None:
    from planbook.errors import PolicyDenied

    session = project(tmp_path, '[tool.planbook.permissions]\ndelete_file = "deny"\n')
    with pytest.raises(PolicyDenied):
        session.propose.delete_file("notes.txt", reason="x")


def test_pruning_keeps_pairs_and_recent_messages() -> None:
    big = "row\n" * 5000
    messages: list[ModelRequest | ModelResponse] = []
    for i in range(6):
        messages.append(
            ModelResponse(
                parts=[ToolCallPart("read_file", {"path": f"f{i}"}, tool_call_id=f"c{i}")]
            )
        )
        messages.append(
            ModelRequest(parts=[ToolReturnPart("read_file", big, tool_call_id=f"c{i}")])
        )
    pruned = prune(list(messages), budget=50_000, keep_last=2)
    assert history_size(pruned) <= 50_000
    assert len(pruned) == len(messages)
    first = pruned[1].parts[0]
    assert isinstance(first, ToolReturnPart) and first.content.startswith("[pruned")
    assert first.tool_call_id == "c0"
    last = pruned[-1].parts[0]
    assert isinstance(last, ToolReturnPart) and last.content == big


async def test_the_plan_survives_pruning(tmp_path: Path) -> None:
    from planbook.agent.context import config_of

    (tmp_path / "big.txt").write_text("line of text\n" * 3000)
    session = make_session(tmp_path)
    # The mechanical fallback, and the whole plan with every request, as before summaries.
    config_of(session).history_budget_chars = 5000
    config_of(session).context_strategy = "prune"
    config_of(session).plan_in_requests = "whole"
    seen: list[str] = []
    calls = [("insert_cell", {"source": "x = 1", "reason": "the step to keep"})]
    calls += [("read_file", {"path": "big.txt", "offset": i * 100}) for i in range(6)]
    script = Scripted(calls)
    model = script.to_model()
    inner = model.function
    assert inner is not None

    async def spy(messages, info):  # type: ignore[no-untyped-def]
        seen.append(info.instructions or "")
        return await inner(messages, info)

    model.function = spy
    run = await plan_task(session, "x", model=model)
    assert run.status == "finished"
    assert any("pruned old tool outputs" in a.message for a in run.activity)
    assert "the step to keep" in seen[-1] and "step 1 [pending]" in seen[-1]
