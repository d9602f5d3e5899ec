"""Revisions: `%plan diff` names withdrawn steps, `%plan restore N` brings one back as a new
revision; ask mode keeps one plan per task; problems show one line each."""

from __future__ import annotations

from pathlib import Path

import pytest
from IPython.core.error import UsageError

import planbook
from planbook.agent.context import decisions_of
from planbook.agent.run import plan_task, revise_task
from planbook.agents import Scripted
from planbook.errors import PlanbookError, UsageMistake
from planbook.surfaces import plan_verbs
from tests.agent.conftest import next_decision

pytestmark = pytest.mark.anyio

FIRST = Scripted(
    [
        ("insert_cell", {"source": "a = 1", "reason": "first"}),
        ("insert_cell", {"source": "b = 2", "reason": "second"}),
        ("present_plan", {"summary": "Two cells."}),
    ]
)
SECOND = Scripted(
    [
        ("insert_cell", {"source": "c = 3", "reason": "third"}),
        ("withdraw_step", {"step_number": 2, "reason": "not needed"}),
        ("present_plan", {"summary": "a and c."}),
    ]
)


async def revised(session: planbook.Session) -> None:
    assert (await plan_task(session, "cells", model=FIRST)).status == "finished"
    run = await revise_task(session, "replace b by c", model=SECOND)
    assert run.status == "finished", run.error


async def test_diff_shows_added_and_withdrawn_steps(session: planbook.Session) -> None:
    await revised(session)
    lines = session.diff_revisions(1, 2).splitlines()
    assert "feedback: replace b by c" in lines
    assert [x.split(":")[0] for x in lines if x[0] in "+-~>"] == [
        "- step 2 withdrawn",
        "+ step 3 added",
    ]
    assert session.diff_revisions(2, 1).count("put back") == 1


async def test_restore_makes_an_earlier_revision_current_as_a_new_one(
    session: planbook.Session, capsys: pytest.CaptureFixture[str]
) -> None:
    await revised(session)
    plan_verbs.run(session, "restore 1")
    assert "revision 3 restores revision 1 (2 steps)" in capsys.readouterr().out
    plan = session.current_plan()
    assert plan is not None and [r.number for r in plan.revisions] == [1, 2, 3]
    assert [(s.status, s.reason) for s in plan.steps] == [
        ("pending", "first"),
        ("pending", "second"),
    ]
    assert plan.state == "awaiting_approval"
    assert len(plan.revision(2).steps) == 3  # history kept as it was
    report = session.approve()
    assert report.ok
    assert [c.source for c in session.cells()][-2:] == ["a = 1", "b = 2"]
    with pytest.raises(UsageMistake, match="already the current one"):
        plan_verbs.run(session, "restore 3")
    with pytest.raises(PlanbookError, match="there is no revision 9"):
        plan_verbs.run(session, "restore 9")
    with pytest.raises(UsageError, match="`two` is not a revision number: usage: `%plan restore"):
        plan_verbs.run(session, "restore two")


async def test_restore_keeps_what_has_run(session: planbook.Session) -> None:
    await revised(session)
    session.approve("1")  # step 1 (a = 1) runs in revision 2
    session.restore_revision(1)
    plan = session.current_plan()
    assert plan is not None
    assert [s.status for s in plan.steps] == ["done", "pending"]


async def test_ask_mode_keeps_one_plan_per_task(session: planbook.Session, tmp_path: Path) -> None:
    session.set_mode("ask")
    writes = [
        ("write_file", {"path": f"{name}.txt", "content": "x\n", "reason": name})
        for name in ("one", "two")
    ]
    run = plan_task(session, "export twice", model=Scripted(writes))
    for _ in range(2):
        decision = await next_decision(session)
        decisions_of(session).answer(decision.id, "approve")
        while decisions_of(session).pending():
            await __import__("asyncio").sleep(0.01)
    await run
    assert run.status == "finished", run.error
    plans = session.store.state.plans
    assert len(plans) == 1 and plans[0].task == "export twice"
    assert [s.status for s in plans[0].steps] == ["done", "done"]


async def test_unknown_tools_and_malformed_calls_show_one_line_each(
    session: planbook.Session,
) -> None:
    script = Scripted(
        [
            ("frobnicate", {"x": 1}),
            ("insert_cell", {"reason": "no source"}),
            ("list_cells", {}),
        ]
    )
    run = await plan_task(session, "x", model=script)
    assert run.status == "finished", run.error
    errors = [a.message for a in run.activity if a.type == "error"]
    assert len(errors) == 2, errors
    assert "unknown tool 'frobnicate'" in errors[0]
    assert errors[1].startswith("malformed insert_cell call sent back to the model")
    assert all("\n" not in e for e in errors)
