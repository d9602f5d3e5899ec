"""The conversation lives with the notebook: messages, todos, open questions and activity are in
``metadata.planbook.conversation``, so a new kernel (a new Session on the same file) shows them,
answers them and continues the run where it stopped."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest

import planbook
from planbook.agent import memory
from planbook.agent.context import decisions_of, todos_of
from planbook.agent.run import continue_task, plan_task
from planbook.agent.state import state_of
from planbook.agents import Scripted
from planbook.documents.file import FileNotebook
from planbook.errors import UsageMistake
from planbook.surfaces.magics_agent import answer_line, conversation_text
from planbook.workspace.files import Workspace
from tests.agent.conftest import next_decision

pytestmark = pytest.mark.anyio

SCRIPT = [
    ("insert_cell", {"source": "y = x + 1", "reason": "add y"}),
    ("todo_write", {"todos": [{"content": "add y", "step_ids": ["$step"]}]}),
    ("ask_user", {"question": "Run it too?", "options": ["yes", "no"]}),
    ("run_cell", {"cell_id": "$new_cell", "reason": "see y"}),
    ("present_plan", {"summary": "Add y and run it."}),
]


def notebook(tmp_path: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1", id="first")]
    path = tmp_path / "analysis.ipynb"
    nbformat.write(nb, path)
    return path


def open_session(path: Path) -> planbook.Session:
    return planbook.Session(FileNotebook(path), Workspace(path.parent), notebook_path=path)


async def crash_at_the_question(tmp_path: Path) -> Path:
    """Run the script until it asks, and keep the file as a dead kernel would have left it."""
    path = notebook(tmp_path)
    first = open_session(path)
    run = plan_task(first, "add y", model=Scripted(SCRIPT))
    await next_decision(first)
    crashed = tmp_path / "after-crash" / path.name
    crashed.parent.mkdir()
    shutil.copy(path, crashed)
    run.stop()
    await run
    return crashed


async def test_a_new_kernel_sees_answers_and_continues_the_conversation(tmp_path: Path) -> None:
    path = await crash_at_the_question(tmp_path)
    saved = json.loads(path.read_text())["metadata"]["planbook"]["conversation"]
    assert saved["status"] == "running" and saved["task"] == "add y"
    assert [d["question"] for d in saved["decisions"]] == ["Run it too?"]

    second = open_session(path)  # what a restarted kernel does
    shown = conversation_text(second)
    assert shown is not None
    assert "interrupted" in shown and "%plan continue" in shown
    assert "[staged] add y" in shown  # the todo, linked to the staged step
    assert "waiting for you (d1): Run it too?" in shown
    assert [t.content for t in todos_of(second).todos] == ["add y"]

    listed = answer_line(second, "")
    assert listed.startswith("d1: Run it too? [yes / no]")
    with pytest.raises(UsageMistake, match="not an option"):
        answer_line(second, "d1 maybe")
    assert "recorded" in answer_line(second, "d1 yes")

    run = await continue_task(second, model=Scripted(SCRIPT))
    assert run.status == "finished", run.error
    plan = second.current_plan()
    assert plan is not None and plan.state == "awaiting_approval"
    # Not replayed from the start: one insert, then the run_cell after the answered question.
    assert [s.operation.kind for s in plan.steps] == ["insert_cell", "run_cell"]
    assert any("Run it too? -> yes (answered earlier)" in a.message for a in run.activity)
    assert not decisions_of(second).pending()
    after = memory.saved(open_session(path))
    assert after is not None and after.status == "finished" and not after.open_decisions()


async def test_continue_after_a_finished_run_says_there_is_nothing_to_continue(
    tmp_path: Path,
) -> None:
    session = open_session(notebook(tmp_path))
    with pytest.raises(UsageMistake, match="no agent conversation"):
        continue_task(session, model=Scripted(SCRIPT))
    await plan_task(session, "add y", model=Scripted(SCRIPT, answers=["no"]))
    with pytest.raises(UsageMistake, match="nothing to continue"):
        continue_task(open_session(session.notebook_path), model=Scripted(SCRIPT))  # type: ignore[arg-type]


async def test_a_stripped_notebook_opens_and_starts_a_fresh_conversation(tmp_path: Path) -> None:
    path = await crash_at_the_question(tmp_path)
    nb = nbformat.read(path, as_version=4)
    del nb.metadata["planbook"]["conversation"]  # what sharing without it leaves
    nbformat.write(nb, path)
    session = open_session(path)
    assert conversation_text(session) is None
    assert answer_line(session, "") == "planbook: no open decision"
    assert [s.operation.kind for s in session.current_plan().steps] == ["insert_cell"]  # type: ignore[union-attr]


async def test_the_saved_conversation_is_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from planbook.agent.context import config_of

    monkeypatch.setattr(memory, "MESSAGES_BUDGET", 30_000)
    (tmp_path / "big.txt").write_text("a line of the file\n" * 20_000)
    session = open_session(notebook(tmp_path))
    config_of(session).context_tokens = 1_000_000  # the model's context is not the limit here
    reads = [("read_file", {"path": "big.txt", "offset": i * 400}) for i in range(12)]
    run = await plan_task(session, "read", model=Scripted(reads))
    assert run.status == "finished", run.error
    assert sum(len(str(m)) for m in state_of(session).history) > 100_000
    saved = memory.saved(session)
    assert saved is not None
    text = json.dumps(saved.messages)
    assert len(text) <= 30_000
    assert "earlier messages were dropped" in text or "[pruned" in text
    # still a conversation pydantic-ai accepts, ending with the run's last answer
    messages = memory.load_messages(saved.messages)
    assert messages[-1].parts[0].content == "Scripted run finished."  # type: ignore[union-attr]


async def test_a_newer_conversation_schema_is_refused_untouched(tmp_path: Path) -> None:
    path = notebook(tmp_path)
    nb = nbformat.read(path, as_version=4)
    nb.metadata["planbook"] = {"schema_version": 1, "conversation": {"schema_version": 2}}
    nbformat.write(nb, path)
    before = path.read_bytes()
    from planbook.errors import MetadataError

    with pytest.raises(MetadataError, match="conversation"):
        open_session(path)
    assert path.read_bytes() == before
