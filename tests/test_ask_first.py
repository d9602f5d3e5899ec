"""Ask before a step, through the Session alone: the question is data on the step, an approved
run pauses on it by itself (no agent loaded), and the answer lets the run go on."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from planbook.errors import UsageMistake
from planbook.sessions.session import Session
from tests.conftest import reopen, sources


def test_a_question_pauses_an_approved_run_with_no_agent_loaded(nb_path: Path) -> None:
    """In a fresh interpreter that never imports planbook.agent: the run pauses before the
    step, the step and the approved ones after it wait, and the answer runs them."""
    script = textwrap.dedent(
        f"""
        import json, sys
        from pathlib import Path
        from planbook.documents.file import FileNotebook
        from planbook.sessions.session import Session
        from planbook.workspace.files import Workspace

        path = Path({str(nb_path)!r})
        session = Session(FileNotebook(path), Workspace(path.parent), notebook_path=path)
        for name in ("a", "b", "c"):
            session.propose.insert_cell(f"{{name}} = 1", reason=name)
        session.ask_before(2, "Overwrite the table?", ["go on"])
        report = session.approve()
        paused = [s.status for s in session.current_plan().steps]
        waiting = [(n, s.ask_first.question) for n, s in session.waiting_questions()]
        after = session.answer_step(2, "go on")
        print(json.dumps({{
            "stopped": report.stopped,
            "paused": paused,
            "waiting": waiting,
            "after": str(after),
            "done": [s.status for s in session.current_plan().steps],
            "agent": sorted(m for m in sys.modules if m.startswith("planbook.agent")),
        }}))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env={"PYTHONPATH": str(Path.cwd()), "PATH": "/usr/bin:/bin", "HOME": str(nb_path.parent)},
    )
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["agent"] == []
    assert seen["stopped"].startswith("paused before step 2: Overwrite the table?")
    assert "session.answer_step(2, choice)" in seen["stopped"]
    assert seen["paused"] == ["done", "pending", "pending"]
    assert seen["waiting"] == [[2, "Overwrite the table?"]]
    assert "step 2 (insert_cell): done" in seen["after"]
    assert seen["done"] == ["done", "done", "done"]
    assert [src for _, src in sources(nb_path)][-3:] == ["a = 1", "b = 1", "c = 1"]


def test_the_question_and_its_answer_are_kept_in_the_notebook(
    session: Session, nb_path: Path
) -> None:
    session.propose.insert_cell("a = 1", reason="a")
    session.propose.insert_cell("b = 2", reason="b")
    asked = session.ask_before(2, "Really?")
    assert asked.options == ["stop here"]
    session.approve()
    restarted = reopen(nb_path)  # a kernel restarted while the question waited
    [(number, step)] = restarted.waiting_questions()
    assert number == 2 and step.ask_first is not None and step.ask_first.question == "Really?"
    with pytest.raises(UsageMistake, match="not an option of step 2's question"):
        restarted.answer_step(2, "maybe")
    assert restarted.answer_step(2, "stop here") is None
    plan = reopen(nb_path).current_plan()
    assert plan is not None and [s.status for s in plan.steps] == ["done", "pending"]
    assert plan.steps[1].ask_first is not None and plan.steps[1].ask_first.answer == "stop here"
    # answered once: approving the step again runs it without asking
    assert restarted.approve().ok
    with pytest.raises(UsageMistake, match="answered already"):
        restarted.answer_step(2, "stop here")


def test_an_answer_given_where_the_run_paused_is_in_the_file(
    session: Session, nb_path: Path
) -> None:
    """The usual case: the person answers in the kernel that paused. The question was changed
    in place, and a save kept the step's earlier dump: the file said the question still
    waited, and a restarted kernel asked it again."""
    session.propose.insert_cell("a = 1", reason="a")
    session.propose.insert_cell("b = 2", reason="b")
    session.ask_before(2, "Really?")
    session.approve()
    assert session.answer_step(2, "stop here") is None
    reopened = reopen(nb_path)
    assert reopened.waiting_questions() == []
    asked = reopened.current_plan().steps[1].ask_first  # type: ignore[union-attr]
    assert asked is not None and asked.answer == "stop here" and asked.held_back == []


def test_only_a_pending_step_asks_first(session: Session) -> None:
    session.propose.insert_cell("a = 1", reason="a")
    session.propose.insert_cell("b = 1", reason="b")
    with pytest.raises(UsageMistake, match="there is no step 3 to ask about"):
        session.ask_before(3, "?")
    session.approve(1)
    with pytest.raises(UsageMistake, match="step 1 is done: only a pending step can ask first"):
        session.ask_before(1, "?")


def test_a_question_saved_by_an_older_planbook_moves_onto_its_step(
    session: Session, nb_path: Path
) -> None:
    """Notebooks saved while the question lived in the agent's conversation still pause."""
    session.propose.insert_cell("a = 1", reason="a")
    plan = session.current_plan()
    assert plan is not None
    raw = json.loads(json.dumps(session.document.get_metadata("planbook")))
    raw["conversation"] = {
        "step_questions": [
            {"step_id": plan.steps[0].id, "question": "Sure?", "options": ["yes", "stop here"]}
        ]
    }
    session.document.set_metadata("planbook", raw)
    report = reopen(nb_path).approve()
    assert report.stopped is not None and report.stopped.startswith("paused before step 1: Sure?")
