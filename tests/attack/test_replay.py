"""A signed record copied from one of my notebooks into another carries no authority there
(issue 23, signature replay).

Both notebooks are made with planbook by the same person, under the same key: notebook A in
one folder (its mode, approvals, checkpoints signed as A's), notebook B in another. A's
records are then copied into B as plain JSON, with and without A's notebook identity, the way
anyone holding both files can. A copied or moved notebook is treated the same way until its
person says it is theirs (``planbook trust``); the notebook itself, reopened where it was
signed, keeps its authority with no prompt.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from planbook.agent import memory
from planbook.errors import NeedsConfirmation
from planbook.model.conversation import Conversation
from planbook.surfaces.magics_agent import conversation_text
from tests.attack.test_received_notebooks import _answered_by_the_sender
from tests.conftest import make_notebook, reopen

#: The records of A that carry authority, with the parts of the layout that hold them.
AUTHORITY = ("mode", "mode_signature", "plans", "plan_order", "checkpoints", "blobs")


def meta(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())["metadata"]["planbook"]  # type: ignore[no-any-return]


def copy_records(source: Path, target: Path, keys: tuple[str, ...], *, identity: bool) -> None:
    """Put ``keys`` of ``source``'s planbook metadata into ``target``'s, edited as JSON;
    ``identity``: A's notebook identity too, so the records name the notebook they name."""
    taken = meta(source)
    data = json.loads(target.read_text())
    record = data["metadata"].setdefault("planbook", {"schema_version": 2})
    for key in keys + (("notebook",) if identity else ()):
        if key in taken:
            record[key] = taken[key]
    target.write_text(json.dumps(data, indent=1))


def two_notebooks(tmp_path: Path) -> tuple[Path, Path]:
    """A (in a/) and B (in b/), both made with planbook by the same person."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = make_notebook(tmp_path / "a" / "nb.ipynb", ["x = 1"])
    b = make_notebook(tmp_path / "b" / "nb.ipynb", ["y = 2"])
    reopen(b).propose.write_file("b-notes.txt", "mine\n", reason="B's own step")
    return a, b


@pytest.fixture(params=[False, True], ids=["records-only", "with-As-identity"])
def identity(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


def test_a_signed_mode_copied_into_another_notebook_is_not_adopted(
    tmp_path: Path, identity: bool
) -> None:
    a, b = two_notebooks(tmp_path)
    reopen(a).set_mode("act")
    assert reopen(a).mode == "act"  # A keeps its own mode across a restart
    copy_records(a, b, ("mode", "mode_signature"), identity=identity)
    session = reopen(b)
    assert session.mode == "plan"
    assert any("opens in plan mode" in w for w in session.warnings)
    # a write staged in B waits for review instead of applying as act mode would
    step = session.propose.write_file("run-later.py", "print('x')\n", reason="r")
    assert step.status == "pending" and not (tmp_path / "b" / "run-later.py").exists()


def _approved_in_a(a: Path) -> None:
    """A's step approved (and run) by its person: a signed approval of A's plan."""
    session = reopen(a)
    session.propose.write_file("out.txt", "written by A's step\n", reason="A's step")
    assert session.approve(1).ok


def _back_to_approved(path: Path) -> None:
    """The copied plan's step marked approved and not run, as a notebook saved mid-run."""
    data = json.loads(path.read_text())
    record = data["metadata"]["planbook"]
    plan = next(iter(record["plans"].values()))
    step = plan["revisions"][-1]["steps"][0]
    step["status"], step["run_by"] = "approved", None
    plan["state"] = "executing"
    plan["results"] = []
    record.pop("checkpoints", None)
    path.write_text(json.dumps(data, indent=1))


def test_a_signed_approval_copied_into_another_notebook_runs_nothing(
    tmp_path: Path, identity: bool
) -> None:
    a, b = two_notebooks(tmp_path)
    _approved_in_a(a)
    copy_records(a, b, ("plans", "plan_order"), identity=identity)
    _back_to_approved(b)
    session = reopen(b)
    plan = session.current_plan()
    assert plan is not None
    assert [s.status for s in plan.steps] == ["pending"]
    assert any("approved elsewhere" in w and "back to pending" in w for w in session.warnings)
    assert not (tmp_path / "b" / "out.txt").exists()
    # the view says the approval was made elsewhere, so the person reads the step first
    assert "approved elsewhere" in session.render_text()


def test_the_same_approval_in_its_own_notebook_still_counts(tmp_path: Path) -> None:
    """The control: A's own record, reopened where it was signed, is A's person's."""
    a, _ = two_notebooks(tmp_path)
    _approved_in_a(a)
    _back_to_approved(a)
    session = reopen(a)
    # A's own run cut off: recovered as such, not as an approval made elsewhere
    assert not any("approved elsewhere" in w for w in session.warnings)
    assert any("was cut off" in r for r in session.recovered)
    assert "approved elsewhere" not in session.render_text()


def _checkpoint_in_a(a: Path) -> None:
    (a.parent / "data.txt").write_text("A's old data\n")
    session = reopen(a)
    session.propose.write_file("data.txt", "A's new data\n", reason="A's step")
    assert session.approve(1).ok


def test_a_signed_checkpoint_copied_into_another_notebook_restores_nothing_unasked(
    tmp_path: Path, identity: bool
) -> None:
    a, b = two_notebooks(tmp_path)
    _checkpoint_in_a(a)
    assert not reopen(a).rollback_preview().needs_confirmation  # A's own: no prompt
    (b.parent / "data.txt").write_text("B's data\n")
    copy_records(a, b, ("plans", "plan_order", "checkpoints", "blobs"), identity=identity)
    session = reopen(b)
    assert session.rollback_preview().needs_confirmation
    with pytest.raises(NeedsConfirmation):
        session.rollback()
    assert (b.parent / "data.txt").read_text() == "B's data\n"


def test_every_record_copied_at_once_still_carries_nothing(tmp_path: Path) -> None:
    a, b = two_notebooks(tmp_path)
    _checkpoint_in_a(a)
    reopen(a).set_mode("auto-edit")
    copy_records(a, b, AUTHORITY, identity=True)
    session = reopen(b)
    assert session.mode == "plan"
    assert session.rollback_preview().needs_confirmation
    [line] = [w for w in session.warnings if "signed at" in w]
    assert str(a) in line and "copied or moved" in line and "\n" not in line


def _trust(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "planbook", "trust", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_moved_notebook_counts_as_received_until_its_person_trusts_it(tmp_path: Path) -> None:
    a, _ = two_notebooks(tmp_path)
    _checkpoint_in_a(a)
    reopen(a).set_mode("act")
    moved = a.with_name("renamed.ipynb")
    a.rename(moved)
    session = reopen(moved)
    assert session.mode == "plan"
    assert session.rollback_preview().needs_confirmation
    [line] = [w for w in session.warnings if "signed at" in w]
    assert "planbook trust" in line
    done = _trust(moved)
    assert done.returncode == 0, done.stderr
    assert "renamed.ipynb" in done.stdout
    again = reopen(moved)
    assert again.mode == "act"
    assert not again.rollback_preview().needs_confirmation
    assert not any("signed at" in w for w in again.warnings)


def test_a_copy_of_a_notebook_is_bound_to_neither_until_trusted(tmp_path: Path) -> None:
    a, _ = two_notebooks(tmp_path)
    reopen(a).set_mode("ask")
    copy = a.with_name("copy.ipynb")
    shutil.copy(a, copy)
    assert reopen(copy).mode == "plan"
    assert reopen(a).mode == "ask"  # the original keeps its own


def test_trusting_a_notebook_another_key_signed_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, _ = two_notebooks(tmp_path)
    monkeypatch.setenv("PLANBOOK_SECRET_FILE", str(tmp_path / "sender-secret"))
    reopen(a).set_mode("act")  # made under the sender's key
    before = a.read_bytes()
    monkeypatch.setenv("PLANBOOK_SECRET_FILE", str(tmp_path / "receiver-secret"))
    done = _trust(a)
    assert done.returncode != 0
    assert len(done.stderr.strip().splitlines()) == 1
    assert "not signed by you" in done.stderr
    assert a.read_bytes() == before
    assert reopen(a).mode == "plan"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_a_signed_answer_copied_into_another_notebook_is_not_acted_on(
    tmp_path: Path, identity: bool
) -> None:
    """A's agent asked to write a module that would shadow planbook; A's person answered
    "approve". That answer, copied into B, is no answer there: what a resumed run is given
    (``recorded_answers``) leaves it out, and the conversation shows it as recorded
    elsewhere (tests/attack/test_received_notebooks.py runs the resumed run itself)."""
    (tmp_path / "first").mkdir()
    answered = await _answered_by_the_sender(tmp_path / "first", "plan")
    _, b = two_notebooks(tmp_path)
    copy_records(answered, b, ("conversation",), identity=identity)
    session = reopen(b)
    conversation = memory.saved(session) or Conversation()
    assert memory.recorded_answers(session, conversation) == {}
    shown = conversation_text(session)
    assert shown is not None and "recorded elsewhere (d1)" in shown
    # the control: in A, where it was recorded, the same answer is A's person's
    assert memory.recorded_answers(reopen(answered), memory.saved(reopen(answered)) or conversation)


def test_an_answer_to_an_mcp_clients_question_copied_into_another_notebook_is_no_answer(
    tmp_path: Path, identity: bool
) -> None:
    a, b = two_notebooks(tmp_path)
    asked = reopen(a)
    asked.ask_person("Delete the raw data?", ["yes", "no"], origin="claude-code 2.1.0")
    asked.answer_question("q1", "yes")
    assert reopen(a).person_questions(waiting_only=True) == []  # A's own answer holds there
    copy_records(a, b, ("questions",), identity=identity)
    session = reopen(b)
    [question] = session.person_questions()
    assert question.answer == "yes" and not session.answered_here(question)
    assert session.person_questions(waiting_only=True) == [question]  # still waits for B's person
