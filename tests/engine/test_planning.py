"""engine/planning.py on its own: staging, dependencies, risk, skip/move and revisions.

Steps are staged against the cells of a real notebook file (FileNotebook); nothing here runs,
so the file must stay exactly as it was: planning only edits the plan.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from planbook.documents.file import FileNotebook
from planbook.engine import planning
from planbook.engine.approval import approval_hash
from planbook.errors import UnknownCell, UnknownStep, UsageMistake
from planbook.model.operations import (
    AnyOperation,
    DeleteCell,
    EditCell,
    InsertCell,
    RunCell,
    WriteFile,
)
from planbook.model.plan import Approval, Plan, Step
from planbook.workspace.files import Workspace
from tests.support.engine import write_notebook


@pytest.fixture
def notebook(tmp_path: Path) -> FileNotebook:
    return FileNotebook(write_notebook(tmp_path / "n.ipynb", ["import math", "x = 1", "x + 1"]))


def stage(
    plan: Plan, notebook: FileNotebook, op: AnyOperation, *, run_at_approval: bool = False
) -> Step:
    return planning.stage(
        plan,
        op,
        reason="test",
        cells=notebook.cells(),
        workspace=Workspace(notebook.path.parent),
        run_at_approval=run_at_approval,
    )


def approve_all(plan: Plan) -> None:
    """Record an approval of the current revision (what the person saw), as approve does."""
    plan.approvals.append(
        Approval(
            revision=plan.current.number,
            step_ids=tuple(s.id for s in plan.steps),
            sha256=approval_hash(plan.steps),
        )
    )


def test_staging_by_id_and_at_a_position_leaves_the_notebook_alone(
    notebook: FileNotebook,
) -> None:
    before = notebook.path.read_bytes()
    plan = Plan()
    edit = stage(plan, notebook, EditCell(cell_id="c2", source="x = 2"))
    insert = stage(plan, notebook, InsertCell(cell_id="new", source="y = x", after="c2"))
    assert plan.state == "drafting" and [s.id for s in plan.steps] == [edit.id, insert.id]
    assert edit.base != "absent" and insert.base == "absent"
    # The projection is the notebook as it will be: the new cell right after c2.
    projected = planning.projection(plan, notebook.cells(), None)
    assert [c.source for c in projected.cells] == ["import math", "x = 2", "y = x", "x + 1"]
    assert planning.step_at(plan, 2) is insert
    with pytest.raises(UnknownStep):
        planning.step_at(plan, 3)
    with pytest.raises(UnknownCell, match="no cell with id 'nope'"):
        stage(plan, notebook, EditCell(cell_id="nope", source=""))
    assert notebook.path.read_bytes() == before


def test_a_step_depends_on_the_step_that_made_or_last_changed_its_target(
    notebook: FileNotebook,
) -> None:
    plan = Plan()
    first = stage(plan, notebook, EditCell(cell_id="c2", source="x = 2"))
    second = stage(plan, notebook, EditCell(cell_id="c2", source="x = 3"))
    insert = stage(plan, notebook, InsertCell(cell_id="new", source="y = 1", after="c3"))
    run = stage(plan, notebook, RunCell(cell_id="new"))
    below = stage(plan, notebook, InsertCell(cell_id="later", source="z", after="new"))
    untouched = stage(plan, notebook, EditCell(cell_id="c1", source="import os"))
    assert first.depends_on == ()
    assert second.depends_on == (first.id,)
    assert run.depends_on == (insert.id,)  # it runs the cell the insert makes
    assert below.depends_on == (insert.id,)  # its anchor exists only once the insert ran
    assert untouched.depends_on == ()


def test_risk_is_derived_from_what_the_step_does(notebook: FileNotebook) -> None:
    plan = Plan()
    assert stage(plan, notebook, InsertCell(cell_id="n", source="1", after="c1")).risk == "low"
    assert stage(plan, notebook, EditCell(cell_id="c2", source="x = 5")).risk == "medium"
    assert stage(plan, notebook, DeleteCell(cell_id="c3")).risk == "high"
    assert stage(plan, notebook, WriteFile(path="new.txt", content="x")).risk == "low"
    (notebook.path.parent / "old.txt").write_text("keep")
    assert stage(plan, notebook, WriteFile(path="old.txt", content="x")).risk == "medium"


def test_run_true_is_refused_for_what_cannot_run(notebook: FileNotebook) -> None:
    plan = Plan()
    with pytest.raises(UsageMistake, match="markdown cell cannot run"):
        stage(
            plan,
            notebook,
            InsertCell(cell_id="m", source="# t", cell_type="markdown", after="c1"),
            run_at_approval=True,
        )
    with pytest.raises(UsageMistake, match=r"stage a run step instead: `pb.propose.run_cell"):
        stage(plan, notebook, DeleteCell(cell_id="c1"), run_at_approval=True)
    assert plan.steps == []


def test_skip_and_unskip_only_from_the_right_status(notebook: FileNotebook) -> None:
    plan = Plan()
    stage(plan, notebook, EditCell(cell_id="c2", source="x = 2"))
    assert planning.set_skipped(plan, 1, True).status == "skipped"
    with pytest.raises(UsageMistake, match="only a pending step can be skipped"):
        planning.set_skipped(plan, 1, True)
    # A skipped step is out of the projection: the cell stays as the notebook has it.
    assert planning.projection(plan, notebook.cells(), None).cells[1].source == "x = 1"
    assert planning.set_skipped(plan, 1, False).status == "pending"
    with pytest.raises(UsageMistake, match="only a skipped step can be unskipped"):
        planning.set_skipped(plan, 1, False)


def test_move_keeps_every_step_after_the_step_it_builds_on(notebook: FileNotebook) -> None:
    plan = Plan()
    a = stage(plan, notebook, EditCell(cell_id="c1", source="import os"))
    b = stage(plan, notebook, InsertCell(cell_id="new", source="y", after="c3"))
    c = stage(plan, notebook, EditCell(cell_id="new", source="y = 2"))
    with pytest.raises(UsageMistake, match="before the step it builds on"):
        planning.move(plan, 3, 2)
    assert [s.id for s in plan.steps] == [a.id, b.id, c.id]
    planning.move(plan, 1, 4)  # to the end
    assert [s.id for s in plan.steps] == [b.id, c.id, a.id]
    revisions = len(plan.revisions)
    planning.move(plan, 2, 3)  # already there: nothing changes
    assert [s.id for s in plan.steps] == [b.id, c.id, a.id] and len(plan.revisions) == revisions
    with pytest.raises(UnknownStep):
        planning.move(plan, 1, 9)
    plan.steps[0].status = "done"
    with pytest.raises(UsageMistake, match="only pending steps move"):
        planning.move(plan, 1, 3)


def test_an_approved_revision_is_never_edited_in_place(notebook: FileNotebook) -> None:
    plan = Plan()
    stage(plan, notebook, EditCell(cell_id="c1", source="import os"))
    stage(plan, notebook, EditCell(cell_id="c2", source="x = 2"))
    approve_all(plan)
    approved = plan.current.model_dump()
    planning.move(plan, 2, 1)
    assert len(plan.revisions) == 2
    assert plan.revision(1).model_dump() == approved  # what the approval names is intact
    assert [s.id for s in plan.revision(2).steps] == [
        s.id for s in reversed(plan.revision(1).steps)
    ]
    assert approval_hash(plan.revision(1).steps) == plan.approvals[0].sha256


def test_revise_starts_a_new_revision_and_keeps_the_old_one(notebook: FileNotebook) -> None:
    plan = Plan()
    stage(plan, notebook, EditCell(cell_id="c2", source="x = 2"))
    plan.fire("present")
    with pytest.raises(UsageMistake, match="say what should change"):
        planning.revise(plan, "  ")
    old = plan.current.model_dump()
    revision = planning.revise(plan, "use x = 3 instead")
    assert (revision.number, revision.parent, revision.feedback) == (2, 1, "use x = 3 instead")
    assert plan.state == "drafting"
    revision.steps[0].status = "rejected"
    stage(plan, notebook, EditCell(cell_id="c2", source="x = 3"))
    assert plan.revision(1).model_dump() == old
    assert len(plan.revision(2).steps) == 2
