"""The Python API against real notebook files: staging, approval, execution, integrity."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from planbook.errors import PlanbookError, UnknownCell, UnknownStep, UsageMistake
from planbook.sessions.session import Session
from tests.conftest import reopen, sources
from tests.support.tamper import after_first_step


def test_staging_changes_nothing_until_approval(session: Session, nb_path: Path) -> None:
    before = sources(nb_path)
    session.propose.insert_cell("y = 2", after="c1", reason="add y")
    session.propose.edit_cell("c2", "x = 10", reason="bigger")
    session.propose.delete_cell("c3", reason="noise")
    session.propose.write_file("helpers.py", "def f():\n    return 1\n", reason="helper")
    session.propose.shell("touch made-by-shell", reason="marker")
    assert sources(nb_path) == before
    assert sorted(p.name for p in nb_path.parent.iterdir()) == ["analysis.ipynb"]
    assert [s.status for s in session.current_plan().steps] == ["pending"] * 5


def test_approve_some_runs_exactly_those_in_order(session: Session, nb_path: Path) -> None:
    session.propose.insert_cell("y = 2", after="c1", reason="add y")
    session.propose.edit_cell("c2", "x = 10", reason="bigger")
    session.propose.write_file("notes.txt", "hello\n", reason="notes")
    report = session.approve("1,3")
    assert report.ok and [o.number for o in report.outcomes] == [1, 3]
    cells = sources(nb_path)
    assert [src for _, src in cells] == ["import math", "y = 2", "x = 1", "print(x + 1)"]
    assert (nb_path.parent / "notes.txt").read_text() == "hello\n"
    assert [s.status for s in session.current_plan().steps] == ["done", "pending", "done"]
    assert session.current_plan().state == "awaiting_approval"


def test_a_number_is_a_step_and_first_n_is_a_count(session: Session, nb_path: Path) -> None:
    for n in range(4):
        session.propose.insert_cell(f"v{n} = {n}", reason=f"v{n}")
    session.approve(2)
    assert [s.status for s in session.current_plan().steps] == [
        "pending",
        "done",
        "pending",
        "pending",
    ]
    session.approve("4")
    assert [s.status for s in session.current_plan().steps] == [
        "pending",
        "done",
        "pending",
        "done",
    ]
    session.approve(first=1)
    assert [s.status for s in session.current_plan().steps] == ["done", "done", "pending", "done"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("0", "start at 1"),
        ("99", "there is no step 99"),
        ("x", "`x` is not a step number"),
        ("1,99", "there is no step 99"),
        ("3-1", "empty range"),
    ],
)
def test_bad_step_selections_are_refused_and_change_nothing(
    session: Session, nb_path: Path, spec: str, message: str
) -> None:
    session.propose.insert_cell("y = 2", reason="y")
    before = nb_path.read_bytes()
    with pytest.raises(UsageMistake, match=message):
        session.approve(spec)
    assert nb_path.read_bytes() == before
    assert session.current_plan().steps[0].status == "pending"


def test_empty_plan_and_nothing_pending(session: Session) -> None:
    with pytest.raises(UsageMistake, match="no plan yet"):
        session.approve()
    session.propose.insert_cell("y = 2", reason="y")
    session.approve()
    with pytest.raises(UsageMistake, match="no step is pending"):
        session.approve()
    with pytest.raises(UsageMistake, match="nothing to reject"):
        session.reject()


def test_unknown_cell_and_missing_anchor_are_refused(session: Session) -> None:
    for call in (
        lambda: session.propose.edit_cell("nope", "x"),
        lambda: session.propose.insert_cell("x", after="nope"),
        lambda: session.propose.run_cell("nope"),
        lambda: session.propose.move_cell("c1", after="nope"),
    ):
        with pytest.raises(UnknownCell, match="'nope'"):
            call()
    assert session.current_plan() is None or not session.current_plan().steps


def test_malformed_arguments_never_reach_the_plan(session: Session) -> None:
    with pytest.raises(UsageMistake, match="invalid InsertCell argument `cell_type`"):
        session.propose.insert_cell("x", cell_type="python")  # type: ignore[arg-type]
    with pytest.raises(UsageMistake, match=r"after. or .before., not both"):
        session.propose.insert_cell("x", after="c1", before="c2")
    with pytest.raises(UsageMistake, match="list of"):
        session.propose.edit_file("a.txt", {"search": "a", "replace": "b"})  # type: ignore[arg-type]
    with pytest.raises(PlanbookError, match="outside the workspace"):
        session.propose.write_file("../escape.txt", "x")
    assert session.current_plan() is None or not session.current_plan().steps


def test_later_steps_build_on_earlier_staged_ones(session: Session, nb_path: Path) -> None:
    inserted = session.propose.insert_cell("z = 3", after="c3", reason="z")
    session.propose.edit_cell(inserted.operation.cell_id, "z = 4", reason="fix z")  # type: ignore[union-attr]
    session.propose.write_file("m.py", "A = 1\n", reason="module")
    session.propose.edit_file("m.py", [{"search": "A = 1", "replace": "A = 2"}], reason="bump")
    assert session.current_plan().steps[1].depends_on == (inserted.id,)
    with pytest.raises(UsageMistake, match="builds on step 1"):
        session.approve([2])
    assert session.approve().ok
    assert sources(nb_path)[-1][1] == "z = 4"
    assert (nb_path.parent / "m.py").read_text() == "A = 2\n"


def test_a_target_changed_after_staging_is_a_conflict(session: Session, nb_path: Path) -> None:
    session.propose.edit_cell("c2", "x = 10", reason="bigger")
    session.propose.write_file("data.txt", "new\n", reason="data")
    nb = nbformat.read(nb_path, as_version=4)
    nb.cells[1].source = "x = 'mine'"
    nbformat.write(nb, nb_path)
    (nb_path.parent / "data.txt").write_text("someone else's")
    report = session.approve()
    assert not report.ok
    assert report.outcomes[0].status == "conflict"
    assert "changed after the step was staged" in report.outcomes[0].message
    assert str(report).startswith("step 1 (edit_cell): conflict: cell 'c2' changed")
    assert sources(nb_path)[1][1] == "x = 'mine'"
    assert (nb_path.parent / "data.txt").read_text() == "someone else's"
    steps = session.current_plan().steps
    assert [s.status for s in steps] == ["conflict", "pending"]
    report = session.approve()
    assert report.outcomes[0].status == "conflict"
    assert "exists now but did not" in report.outcomes[0].message


def test_a_plan_changed_after_approval_is_refused(session: Session, nb_path: Path) -> None:
    session.propose.insert_cell("a = 1", reason="a")
    session.propose.insert_cell("b = 2", reason="b")

    def rewrite(step: dict[str, Any]) -> None:  # the second approved step, in the saved plan
        step["operation"]["source"] = "import os; os.remove('x')"

    after_first_step(session, rewrite)
    report = session.approve()
    assert report.stopped and "approval hash mismatch" in report.stopped
    assert [src for _, src in sources(nb_path)][-1] == "a = 1"
    assert "import os" not in nb_path.read_text().split('"planbook"')[0]
    assert session.current_plan().steps[1].status == "pending"


def test_reject_skip_move_revise_history_diff(session: Session) -> None:
    for n in range(1, 5):
        session.propose.insert_cell(f"s{n} = {n}", reason=f"s{n}")
    ids = [s.id for s in session.current_plan().steps]
    session.skip(2)
    with pytest.raises(UsageMistake, match="only a pending step can be skipped"):
        session.skip(2)
    session.move(4, before=1)
    assert [s.id for s in session.current_plan().steps] == [ids[3], ids[0], ids[1], ids[2]]
    revision = session.revise("use smaller numbers")
    assert revision.number == 2 and len(session.current_plan().revisions) == 2
    assert session.diff_revisions(1, 2).splitlines()[0] == "feedback: use smaller numbers"
    assert (
        "moved" in session.diff_revisions(1, 2)
        or session.current_plan().revisions[0].steps[0].id == ids[3]
    )
    session.reject("3")
    assert session.current_plan().steps[2].status == "rejected"
    with pytest.raises(UnknownStep):
        session.skip(9)
    session.approve()  # runs the pending ones only: 1, 2 (skipped stays), 4
    assert [s.status for s in session.current_plan().steps] == ["done", "done", "rejected", "done"]
    assert "revision 1" in session.history() and "revision 2" in session.history()


def test_reject_everything_cancels_the_plan(session: Session, nb_path: Path) -> None:
    session.propose.insert_cell("a = 1", reason="a")
    session.reject()
    assert session.store.state.plans[0].state == "cancelled"
    step = session.propose.insert_cell("b = 1", reason="b")
    assert session.current_plan().id != session.store.state.plans[
        0
    ].id and session.current_plan().steps == [step]


def test_the_plan_survives_a_restart_and_can_be_approved(session: Session, nb_path: Path) -> None:
    session.propose.edit_cell("c2", "x = 5", reason="five")
    session.propose.write_file("out.txt", "5\n", reason="five")
    again = reopen(nb_path)
    assert [s.status for s in again.current_plan().steps] == ["pending", "pending"]
    assert again.approve().ok
    assert sources(nb_path)[1][1] == "x = 5"
    stored = nbformat.read(nb_path, as_version=4).metadata["planbook"]
    assert stored["schema_version"] == 2
    approval = next(iter(stored["plans"].values()))["approvals"][0]
    assert len(approval["sha256"]) == 64 and approval["step_ids"]


def test_corrupted_or_future_metadata_is_refused_and_untouched(nb_path: Path) -> None:
    for bad, message in (
        ({"schema_version": 99}, "newer than this planbook"),
        ({"schema_version": 1, "plans": "oops"}, "corrupted at plans"),
        (["not", "an", "object"], "is a list"),
    ):
        nb = nbformat.read(nb_path, as_version=4)
        nb.metadata["planbook"] = bad
        nbformat.write(nb, nb_path)
        raw = nb_path.read_bytes()
        with pytest.raises(PlanbookError, match=message):
            reopen(nb_path)
        assert nb_path.read_bytes() == raw


def test_modes_decide_what_applies(session: Session, nb_path: Path) -> None:
    session.set_mode("act")
    step = session.propose.edit_cell("c2", "x = 2", reason="act")
    assert step.status == "done" and sources(nb_path)[1][1] == "x = 2"
    session.set_mode("auto-edit")
    session.propose.shell("touch ran", reason="not yet")
    assert not (nb_path.parent / "ran").exists()
    session.propose.edit_cell("c1", "import math as m", reason="edit applies")
    assert sources(nb_path)[0][1] == "import math as m"
    session.set_mode("plan")
    session.propose.edit_cell("c1", "import os", reason="staged")
    assert sources(nb_path)[0][1] == "import math as m"
    with pytest.raises(PlanbookError, match="unknown mode `bogus`"):
        session.set_mode("bogus")


def test_shell_step_timeout_fails_and_later_steps_stay_pending(session: Session) -> None:
    session.propose.shell("sleep 5", reason="slow", timeout=0.3)
    session.propose.write_file("after.txt", "x", reason="after")
    report = session.approve()
    assert (
        report.outcomes[0].status == "failed"
        and "timed out after 0.3s" in report.outcomes[0].message
    )
    assert [s.status for s in session.current_plan().steps] == ["failed", "pending"]
    assert report.left_pending == 1
    assert not (session.workspace.root / "after.txt").exists()


def test_dry_run_changes_nothing(session: Session, nb_path: Path) -> None:
    session.propose.edit_cell("c2", "x = 3", reason="x")
    raw = nb_path.read_bytes()
    report = session.approve(dry_run=True)
    assert [o.status for o in report.outcomes] == ["would run"]
    assert nb_path.read_bytes() == raw


def test_a_step_without_a_kernel_fails_clearly(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An earlier test in this process may have left an IPython shell behind: be a plain script.
    monkeypatch.setattr("IPython.get_ipython", lambda: None)
    session.propose.run_cell("c3", reason="run")
    report = session.approve()
    assert report.outcomes[0].status == "failed"
    assert "needs an IPython kernel" in report.outcomes[0].message


def test_a_run_cut_off_by_a_dead_kernel_is_recovered_at_the_next_start(
    session: Session, nb_path: Path
) -> None:
    session.propose.edit_cell("c1", "import os", reason="landed")
    session.propose.edit_cell("c2", "x = 2", reason="never started")
    session.approve([1])
    # what a kernel that died right after applying step 1 leaves in the file
    raw = json.loads(json.dumps(session.document.get_metadata("planbook")))
    next(iter(raw["plans"].values()))["state"] = "executing"
    next(iter(raw["plans"].values()))["revisions"][-1]["steps"][0]["status"] = "running"
    next(iter(raw["plans"].values()))["revisions"][-1]["steps"][1]["status"] = "approved"
    session.document.set_metadata("planbook", raw)

    again = reopen(nb_path)
    assert again.recovered and "cut off" in again.recovered[0]
    assert [s.status for s in again.current_plan().steps] == ["done", "pending"]
    assert again.current_plan().state == "awaiting_approval"
    assert again.approve().ok
    assert [src for _, src in sources(nb_path)][:2] == ["import os", "x = 2"]


def test_file_steps_that_could_never_run_are_refused_when_staged(session: Session) -> None:
    session.workspace.max_bytes = 100
    (session.workspace.root / "blob.bin").write_bytes(b"\x00\x01binary")
    (session.workspace.root / "folder").mkdir()
    cases = [
        (lambda: session.propose.write_file("big.txt", "x" * 101), "over the 100-byte limit"),
        (
            lambda: session.propose.edit_file("blob.bin", [{"search": "a", "replace": "b"}]),
            "binary file",
        ),
        (lambda: session.propose.write_file("folder", "x"), "is a folder"),
        (lambda: session.propose.write_file("analysis.ipynb", "{}"), "the notebook itself"),
        (
            lambda: session.propose.edit_file("missing.txt", [{"search": "a", "replace": "b"}]),
            "does not exist",
        ),
    ]
    for call, message in cases:
        with pytest.raises(PlanbookError, match=message):
            call()
    assert session.current_plan() is None


def test_permission_rules_apply_to_the_python_api_too(tmp_path: Path) -> None:
    from tests.conftest import make_notebook

    nb_path = make_notebook(tmp_path / "n.ipynb", ["x = 1"])
    (tmp_path / "pyproject.toml").write_text(
        '[tool.planbook.permissions]\nshell = { "rm *" = "deny" }\nwrite_file = "ask"\n'
    )
    session = reopen(nb_path)
    session.set_mode("act")
    with pytest.raises(PlanbookError, match="refused by a permission rule"):
        session.propose.shell("rm -rf data", reason="clean")
    step = session.propose.write_file("a.txt", "x", reason="asked, so staged even in act mode")
    assert step.status == "pending" and not (tmp_path / "a.txt").exists()
    assert session.propose.edit_cell("c1", "x = 2", reason="act applies").status == "done"


def test_unreadable_rules_fail_closed_with_a_warning(tmp_path: Path) -> None:
    from tests.conftest import make_notebook

    nb_path = make_notebook(tmp_path / "n.ipynb", ["x = 1"])
    (tmp_path / "planbook.toml").write_text("this is [not toml")
    session = reopen(nb_path)
    assert session.warnings and "invalid TOML" in session.warnings[0]
    session.set_mode("act")
    assert session.propose.edit_cell("c1", "x = 2", reason="staged anyway").status == "pending"
    assert sources(nb_path)[0][1] == "x = 1"


def test_a_fresh_session_closes_the_previous_document(
    nb_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import planbook
    from planbook.documents.file import FileNotebook

    planbook.unload_ipython_extension(None)  # what earlier tests in this process left open
    closed: list[Path] = []
    monkeypatch.setattr(FileNotebook, "close", lambda self: closed.append(self.path), raising=False)
    first = planbook.session(notebook=nb_path, fresh=True)
    second = planbook.session(notebook=nb_path, fresh=True)
    assert second is not first and closed == [nb_path]
    # another notebook's session is the caller's: asked again, the same one; never the kernel's
    assert planbook.session(notebook=nb_path) is second
    assert planbook.session() is not second
    assert planbook.session(notebook=nb_path, kernel=True) is second
    assert planbook.session() is second
    planbook.unload_ipython_extension(None)
    assert closed == [nb_path, nb_path]


def test_a_closed_session_is_not_handed_back(nb_path: Path) -> None:
    """``pb.close()``, then ``planbook.session(nb)``: a session that can still read and stage,
    not the closed one (a live one's room is gone with it). Closed sessions also stayed in
    the process's registry, so ``%unload_ext`` closed them a second time."""
    import planbook

    pb = planbook.session(notebook=nb_path, fresh=True)
    pb.close()
    again = planbook.session(notebook=nb_path)
    assert again is not pb
    again.propose.edit_cell("c2", "x = 5", reason="after a close")
    assert [s.status for s in again.current_plan().steps] == ["pending"]
    kernels = planbook.session(notebook=nb_path, kernel=True)
    kernels.close()
    assert planbook.session(notebook=nb_path) is not kernels
    planbook.unload_ipython_extension(None)


def test_an_insert_next_to_an_edited_cell_does_not_need_that_edit(session: Session) -> None:
    session.propose.edit_cell("c1", "import math as m", reason="edit the anchor")
    session.propose.insert_cell("y = 2", after="c1", reason="insert next to it")
    inserted = session.propose.insert_cell("z = 3", after="c3", reason="new cell")
    session.propose.run_cell(inserted.operation.cell_id, reason="run the new cell")  # type: ignore[union-attr]
    session.reject("1")
    assert session.approve([2]).ok  # the anchor exists whatever its source
    with pytest.raises(UsageMistake, match="builds on step 3"):
        session.approve([4])  # running a cell that step 3 creates does need step 3


def test_act_mode_keeps_one_plan_for_a_task(session: Session, nb_path: Path) -> None:
    session.new_plan("tidy the notebook")
    session.set_mode("act")
    for n in range(3):
        assert session.propose.insert_cell(f"v{n} = {n}", reason=f"v{n}").status == "done"
    plans = session.store.state.plans
    assert len(plans) == 1 and plans[0].task == "tidy the notebook"
    assert [s.status for s in plans[0].steps] == ["done", "done", "done"]
    session.new_plan("next task")  # settled steps only: the old plan is closed, not refused
    assert [p.state for p in session.store.state.plans] == ["completed", "idle"]


def test_rules_written_after_the_session_started_count(session: Session) -> None:
    session.set_mode("act")
    (session.workspace.root / "planbook.toml").write_text('[permissions]\nedit_cell = "ask"\n')
    assert session.propose.edit_cell("c1", "import os", reason="asked now").status == "pending"


def test_session_passes_the_live_choice_to_discovery(nb_path: Path) -> None:
    import planbook

    with pytest.raises(PlanbookError, match=r"cannot edit analysis\.ipynb live: no Jupyter server"):
        planbook.session(notebook=nb_path, fresh=True, live=True)
    session = planbook.session(notebook=nb_path, fresh=True, live=False)
    assert session.document.description.endswith("(given explicitly; live editing turned off)")
    planbook.unload_ipython_extension(None)


# --- issue 9, item 9: small refusals -----------------------------------------------------------
def _with_markdown(nb_path: Path) -> None:
    nb = nbformat.read(nb_path, as_version=4)
    cell = nbformat.v4.new_markdown_cell("# print('not code')")
    cell["id"] = "md"
    nb.cells.append(cell)
    nbformat.write(nb, nb_path)


def test_markdown_is_never_run(session: Session, nb_path: Path) -> None:
    _with_markdown(nb_path)
    before = nb_path.read_bytes()
    with pytest.raises(UsageMistake, match="markdown cell, so it cannot run"):
        session.propose.edit_cell("md", "# still text", reason="x", run=True)
    with pytest.raises(UsageMistake, match="a markdown cell cannot run"):
        session.propose.insert_cell("# t", cell_type="markdown", reason="x", run=True)
    assert nb_path.read_bytes() == before
    assert session.current_plan() is None or session.current_plan().steps == []


def test_a_step_whose_cell_was_deleted_outside_refuses_only_itself(
    session: Session, nb_path: Path
) -> None:
    session.propose.edit_cell("c2", "x = 2", reason="stale soon")
    session.propose.move_cell("c3", after="c1", reason="move")
    nb = nbformat.read(nb_path, as_version=4)
    nb.cells = [c for c in nb.cells if c.id != "c2"]
    nbformat.write(nb, nb_path)
    # Later proposals still work (this raised a TypeError before).
    session.propose.edit_cell("c1", "import math as m", reason="later")
    report = session.approve("1-1")
    assert report.outcomes[0].status == "conflict"
    assert "no longer exists" in report.outcomes[0].message
    assert session.approve().ok
    assert [src for _, src in sources(nb_path)] == ["import math as m", "print(x + 1)"]


def test_an_insert_whose_anchor_was_rolled_back_refuses_only_itself(session: Session) -> None:
    # Found by the state machine: the rolled-back anchor made every later proposal a TypeError.
    anchor = session.propose.insert_cell("a = 1", reason="anchor")
    session.approve()
    session.propose.insert_cell("b = 2", after=anchor.operation.cell_id, reason="stale soon")
    session.rollback()
    session.propose.edit_cell("c1", "import math as m", reason="later")
    report = session.approve("1-1")
    assert report.outcomes[0].status == "conflict"
    assert session.approve().ok


def test_moving_a_step_onto_itself_changes_nothing(session: Session) -> None:
    for n in range(3):
        session.propose.insert_cell(f"v{n} = {n}", reason=f"v{n}")
    session.approve("1-1")
    ids = [s.id for s in session.current_plan().steps]
    revisions = len(session.current_plan().revisions)
    session.move(2, before=2)
    session.move(2, before=3)
    assert [s.id for s in session.current_plan().steps] == ids
    assert len(session.current_plan().revisions) == revisions


def test_a_notebook_whose_metadata_is_refused_is_not_written(tmp_path: Path) -> None:
    from planbook.documents.file import FileNotebook
    from planbook.errors import MetadataError
    from planbook.workspace.files import Workspace

    nb = nbformat.v4.new_notebook()
    nb.nbformat_minor = 4
    nb.cells.append(nbformat.v4.new_code_cell("a = 1"))
    del nb.cells[0]["id"]
    nb.metadata["planbook"] = {"schema_version": 1, "plans": "not a list"}
    path = tmp_path / "old.ipynb"
    path.write_text(nbformat.writes(nb, version=4))
    before = path.read_bytes()
    with pytest.raises(MetadataError, match="left untouched"):
        Session(FileNotebook(path), Workspace(tmp_path, protected=(path,)), notebook_path=path)
    assert path.read_bytes() == before
