"""The Python API's arguments, attacked with the wrong types: each is refused in one line that
says what the argument takes, and nothing is read into the plan or written to the notebook.
Before, ``reason=1`` was a pydantic error calling itself a planbook bug, ``approve(shown=1)``
a TypeError, ``retry([1])`` a comparison error and ``shell(b"ls")`` staged its step, then
failed on it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import planbook
from planbook.errors import PlanbookError, UsageMistake
from planbook.model.questions import PersonQuestion
from tests.conftest import make_notebook

#: a well-formed question, passed beside a wrong `state` so that only the state is wrong
_QUESTION = PersonQuestion(id="q1", question="which file?", origin="test")

#: (what is called, the call): each passes one argument of a type it does not take.
CASES: list[tuple[str, Callable[[Any], object]]] = [
    ("edit_cell reason=1", lambda pb: pb.propose.edit_cell("c1", "x = 2", reason=1)),
    ("edit_cell run=2.5", lambda pb: pb.propose.edit_cell("c1", "x = 2", reason="r", run=2.5)),
    ("edit_cell run=1", lambda pb: pb.propose.edit_cell("c1", "x = 2", reason="r", run=1)),
    ("insert_cell reason=list", lambda pb: pb.propose.insert_cell("z = 1", reason=[0] * 500)),
    ("insert_cell run='yes'", lambda pb: pb.propose.insert_cell("z = 1", run="yes")),
    ("delete_cell reason={}", lambda pb: pb.propose.delete_cell("c2", reason={})),
    ("move_cell reason=1", lambda pb: pb.propose.move_cell("c2", reason=1)),
    ("run_cell reason=bytes", lambda pb: pb.propose.run_cell("c1", reason=b"r")),
    ("write_file reason=1", lambda pb: pb.propose.write_file("a.txt", "a", reason=1)),
    ("delete_file reason=1.5", lambda pb: pb.propose.delete_file("a.txt", reason=1.5)),
    ("edit_file edits=1", lambda pb: pb.propose.edit_file("a.txt", 1, reason="r")),
    ("edit_file edits=bytes", lambda pb: pb.propose.edit_file("a.txt", b"ab", reason="r")),
    ("shell bytes", lambda pb: pb.propose.shell(b"ls", reason="r")),
    ("shell list", lambda pb: pb.propose.shell(["ls", "-l"], reason="r")),
    ("approve by=1", lambda pb: pb.approve(by=1)),
    ("approve shown=1", lambda pb: pb.approve(shown=1)),
    ("approve shown={id: 1}", lambda pb: pb.approve(shown={"s": 1})),
    ("approve dry_run='yes'", lambda pb: pb.approve(dry_run="yes")),
    ("retry [1]", lambda pb: pb.retry([1])),
    ("take_over [1]", lambda pb: pb.take_over([1])),
    ("take_over confirm='yes'", lambda pb: pb.take_over(1, confirm="yes")),
    ("preview [1]", lambda pb: pb.preview([1])),
    ("revise feedback=1", lambda pb: pb.revise(1)),
    ("gc keep_plans=[1]", lambda pb: pb.gc(keep_plans=[1])),
    ("gc keep_checkpoints=2.5", lambda pb: pb.gc(keep_checkpoints=2.5)),
    ("gc keep_plans=True", lambda pb: pb.gc(keep_plans=True)),
    ("render_text shown_to=list", lambda pb: pb.render_text(shown_to=["panel"])),
    ("render_markdown shown_to=1", lambda pb: pb.render_markdown(shown_to=1)),
    ("rollback True", lambda pb: pb.rollback(True)),
    ("plan(task=1)", lambda pb: pb.plan(1)),
    ("hash_of 1", lambda pb: pb.hash_of(1)),
    ("hash_of [1]", lambda pb: pb.hash_of([1])),
    ("step_hashes 'ab'", lambda pb: pb.step_hashes("ab")),
    ("mark_shown surface=1", lambda pb: pb.mark_shown(1)),
    ("mark_shown steps=[{}]", lambda pb: pb.mark_shown("cli", [{}])),
    ("last_shown [1]", lambda pb: pb.last_shown(["cli"])),
    ("step_views plan=5", lambda pb: pb.step_views(5)),
    ("step_views revision='1'", lambda pb: pb.step_views(revision="1")),
    ("step_views revision=True", lambda pb: pb.step_views(revision=True)),
    ("answered_here 'q1'", lambda pb: pb.answered_here("q1")),
    ("answered_in question={}", lambda pb: pb.answered_in(pb.store.state, {"id": "q1"})),
    ("answered_in state={}", lambda pb: pb.answered_in({}, _QUESTION)),
    ("attached 'panel'", lambda pb: pb.attached("panel")),
    ("refuse_denied 'rm -rf'", lambda pb: pb.refuse_denied("rm -rf /")),
    ("refuse_denied a step", lambda pb: pb.refuse_denied(pb.current_plan().steps[0])),
    # a long value is not repeated in the line (each was 350 to 410 characters long)
    ("retry long text", lambda pb: pb.retry("x" * 300)),
    ("skip long text", lambda pb: pb.skip("x" * 300)),
    ("approve first=long text", lambda pb: pb.approve(first="x" * 300)),
    ("approve a long dict", lambda pb: pb.approve({"a": "x" * 300})),
    ("approve [long text]", lambda pb: pb.approve(["x" * 300])),
    ("step_views revision=long text", lambda pb: pb.step_views(revision="x" * 300)),
]


@pytest.mark.parametrize(("what", "call"), CASES, ids=[c[0] for c in CASES])
def test_an_argument_of_the_wrong_type_is_one_line_and_changes_nothing(
    tmp_path: Path, what: str, call: Callable[[Any], object]
) -> None:
    path = make_notebook(tmp_path / "n.ipynb", ["x = 1", "y = 2"])
    (tmp_path / "a.txt").write_text("ab")
    pb = planbook.session(notebook=path, live=False, fresh=True)
    pb.propose.edit_cell("c2", "y = 3", reason="staged before")
    before = path.read_bytes()
    with pytest.raises(PlanbookError) as refused:
        call(pb)
    message = str(refused.value)
    assert isinstance(refused.value, UsageMistake), f"{what}: {message}"
    assert "\n" not in message and "planbook bug" not in message, message
    assert len(message) < 200 and "[0, 0, 0" not in message, message  # not the value again
    assert path.read_bytes() == before
    assert (tmp_path / "a.txt").read_text() == "ab"
    plan = pb.current_plan()
    assert plan is not None and [s.status for s in plan.steps] == ["pending"]
    pb.close()
