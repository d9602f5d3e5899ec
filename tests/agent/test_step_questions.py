"""Decision points: a step can ask a question that pauses execution until the person answers;
the answer is recorded in the log, and the held-back steps run (or stay, on "stop here")."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

import planbook
from planbook.agent.context import decisions_of
from planbook.agent.run import plan_task
from planbook.agent.state import state_of
from planbook.agents import Scripted
from planbook.documents.file import FileNotebook
from planbook.errors import UsageMistake
from planbook.surfaces.magics_agent import answer_line
from planbook.workspace.files import Workspace

pytestmark = pytest.mark.anyio

SCRIPT = Scripted(
    [
        ("insert_cell", {"source": "a = 1", "reason": "first"}),
        ("insert_cell", {"source": "table = 'overwritten'", "reason": "second"}),
        ("insert_cell", {"source": "c = 3", "reason": "third"}),
        (
            "ask_before_step",
            {"step_number": 2, "question": "Overwrite the table?", "options": ["go on"]},
        ),
        ("present_plan", {"summary": "Three cells; ask before the second."}),
    ]
)


def open_session(path: Path) -> planbook.Session:
    return planbook.Session(FileNotebook(path), Workspace(path.parent), notebook_path=path)


async def planned(tmp_path: Path) -> planbook.Session:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 0", id="first")]
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, path)
    session = open_session(path)
    run = await plan_task(session, "three cells", model=SCRIPT)
    assert run.status == "finished", run.error
    return session


def statuses(session: planbook.Session) -> list[str]:
    plan = session.current_plan()
    assert plan is not None
    return [s.status for s in plan.steps]


async def test_execution_pauses_at_the_question_and_resumes_on_the_answer(
    tmp_path: Path,
) -> None:
    session = await planned(tmp_path)
    report = session.approve()
    assert not report.ok and report.stopped is not None
    assert report.stopped.startswith("paused before step 2: Overwrite the table?")
    assert statuses(session) == ["done", "pending", "pending"]
    [decision] = decisions_of(session).pending()
    assert decision.options == ["go on", "stop here"]
    with pytest.raises(UsageMistake, match="not an option"):
        answer_line(session, f"{decision.id} maybe")
    said = answer_line(session, f"{decision.id} 'go on'")
    assert said.startswith(f"planbook: {decision.id} -> go on; the steps held back ran")
    assert statuses(session) == ["done", "done", "done"]
    events = [(e.event, e.detail) for e in session.store.state.log]
    assert ("paused", "before step 2: Overwrite the table?") in events
    assert any(e == "answered" and d.endswith(": go on") for e, d in events)
    assert not decisions_of(session).pending()
    # answered once: a later run does not ask again
    assert session.current_plan().state == "completed"  # type: ignore[union-attr]


async def test_stop_here_leaves_the_steps_unrun(tmp_path: Path) -> None:
    session = await planned(tmp_path)
    session.approve()
    [decision] = decisions_of(session).pending()
    answer_line(session, f"{decision.id} 'stop here'")
    assert statuses(session) == ["done", "pending", "pending"]
    assert [c.source for c in session.cells()] == ["x = 0", "a = 1"]


async def test_a_restarted_kernel_asks_again_and_runs_on_the_answer(tmp_path: Path) -> None:
    session = await planned(tmp_path)
    session.approve()
    assert session.notebook_path is not None
    restarted = open_session(session.notebook_path)  # the old kernel's registry is gone
    listed = answer_line(restarted, "")
    assert "Overwrite the table? [go on / stop here]" in listed
    decision_id = listed.split(":")[0]
    assert "steps held back ran" in answer_line(restarted, f"{decision_id} 1")
    assert statuses(restarted) == ["done", "done", "done"]


async def test_asking_about_a_missing_step_goes_back_to_the_model(
    session: planbook.Session,
) -> None:
    run = await plan_task(
        session,
        "x",
        model=Scripted([("ask_before_step", {"step_number": 4, "question": "?", "options": []})]),
    )
    assert run.status == "finished"
    assert any("there is no step 4" in str(m) for m in state_of(session).history)
