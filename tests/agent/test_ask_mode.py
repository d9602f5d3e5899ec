"""Ask mode: the run pauses on each change and resumes with approve / deny / edit."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

import planbook
from planbook.agent.context import decisions_of
from planbook.agent.run import plan_task
from planbook.agent.state import state_of
from planbook.agents import Scripted
from tests.agent.conftest import next_decision

pytestmark = pytest.mark.anyio

WRITE = ("write_file", {"path": "out.txt", "content": "first\n", "reason": "export"})


def tool_returns(session: planbook.Session, tool: str) -> list[str]:
    return [
        str(p.content)
        for m in state_of(session).history
        for p in m.parts
        if type(p).__name__ == "ToolReturnPart" and getattr(p, "tool_name", None) == tool
    ]


async def test_approve_applies_the_change_behind_a_checkpoint(
    session: planbook.Session, tmp_path: Path
) -> None:
    session.set_mode("ask")
    run = plan_task(session, "export", model=Scripted([WRITE]))
    decision = await next_decision(session)
    assert decision.kind == "approval"
    assert "write out.txt" in decision.question and "export" in decision.question
    assert not (tmp_path / "out.txt").exists()  # paused: nothing written yet
    assert run.status == "running"
    decisions_of(session).answer(decision.id, "approve")
    await run
    assert run.status == "finished", run.error
    assert (tmp_path / "out.txt").read_text() == "first\n"
    assert session.checkpoints()  # the change can be rolled back
    assert "Applied as step 1" in tool_returns(session, "write_file")[0]


async def test_deny_with_a_reason_reaches_the_model(
    session: planbook.Session, tmp_path: Path
) -> None:
    session.set_mode("ask")
    run = plan_task(session, "export", model=Scripted([WRITE]))
    decision = await next_decision(session)
    decisions_of(session).answer(decision.id, "deny", text="write it to data/ instead")
    await run
    assert not (tmp_path / "out.txt").exists()
    [answer] = tool_returns(session, "write_file")
    assert "denied" in answer and "write it to data/ instead" in answer
    plan = session.current_plan()
    assert plan is None or plan.steps == []


async def test_edited_arguments_are_what_gets_applied(
    session: planbook.Session, tmp_path: Path
) -> None:
    session.set_mode("ask")
    run = plan_task(session, "export", model=Scripted([WRITE]))
    decision = await next_decision(session)
    decisions_of(session).answer(decision.id, "edit", args={"content": "edited\n"})
    await run
    assert (tmp_path / "out.txt").read_text() == "edited\n"


async def test_always_allow_adds_a_rule_and_stops_asking(
    session: planbook.Session, tmp_path: Path
) -> None:
    session.set_mode("ask")
    second = ("write_file", {"path": "out.txt", "content": "second\n", "reason": "again"})
    run = plan_task(session, "export", model=Scripted([WRITE, second]))
    decision = await next_decision(session)
    decisions_of(session).answer(decision.id, "always allow")
    await run  # the second write did not ask
    assert (tmp_path / "out.txt").read_text() == "second\n"
    rules = tomllib.loads((tmp_path / "planbook.toml").read_text())["rules"]
    assert rules == [{"tool": "write_file", "pattern": "out.txt", "action": "allow"}]


async def test_auto_edit_applies_edits_but_asks_before_running(
    session: planbook.Session, tmp_path: Path
) -> None:
    session.set_mode("auto-edit")
    run = plan_task(
        session,
        "x",
        model=Scripted(
            [
                WRITE,
                ("shell", {"command": "touch marker", "reason": "mark"}),
            ]
        ),
    )
    decision = await next_decision(session)
    assert (tmp_path / "out.txt").exists()  # the edit applied without a question
    assert "touch marker" in decision.question
    assert not (tmp_path / "marker").exists()
    decisions_of(session).answer(decision.id, "deny", text="no")
    await run
    assert not (tmp_path / "marker").exists()


async def test_stop_while_waiting_keeps_the_plan(session: planbook.Session) -> None:
    run = plan_task(
        session,
        "x",
        model=Scripted(
            [
                ("insert_cell", {"source": "x = 1", "reason": "a"}),
                ("ask_user", {"question": "Bar or line chart?", "options": ["bar", "line"]}),
            ]
        ),
    )
    decision = await next_decision(session)
    assert decision.kind == "question" and decision.options == ["bar", "line"]
    run.stop()
    await run
    assert run.status == "stopped"
    assert "kept" in (run.error or "")
    plan = session.current_plan()
    assert plan is not None and len(plan.steps) == 1
    assert decisions_of(session).pending() == []


async def test_ask_user_answer_goes_back_to_the_model(session: planbook.Session) -> None:
    run = plan_task(
        session,
        "x",
        model=Scripted(
            [
                ("ask_user", {"question": "Bar or line chart?", "options": ["bar", "line"]}),
            ]
        ),
    )
    decision = await next_decision(session)
    decisions_of(session).answer(decision.id, 2)
    await run
    assert tool_returns(session, "ask_user") == ["The person answered: line"]


async def test_mode_switch_happens_only_if_the_person_accepts(session: planbook.Session) -> None:
    run = plan_task(
        session,
        "x",
        model=Scripted(
            [
                ("exit_plan", {"reason": "small safe edit", "mode": "act"}),
                ("exit_plan", {"reason": "really", "mode": "auto-edit"}),
            ]
        ),
    )
    first = await next_decision(session)
    decisions_of(session).answer(first.id, "stay")
    second = await next_decision(session)
    assert session.mode == "plan"
    decisions_of(session).answer(second.id, "switch to auto-edit")
    await run
    assert session.mode == "auto-edit"


async def test_interrupting_the_awaiting_cell_stops_the_run(session: planbook.Session) -> None:
    import asyncio

    run = plan_task(
        session, "x", model=Scripted([("ask_user", {"question": "Go?", "options": ["y", "n"]})])
    )
    waiter = asyncio.ensure_future(run.wait())
    await next_decision(session)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    await run  # the run itself ends cleanly
    assert run.status == "stopped"
