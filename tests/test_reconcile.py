"""Reconciling the plan record with the cells after the document was reloaded underneath
(engine/reconcile.py): each finding in one line, the record settled from what the cells hold."""

from __future__ import annotations

from pathlib import Path

from planbook.documents.memory import MemoryNotebook
from planbook.engine.reconcile import reconcile
from planbook.model.operations import InsertCell
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace


def _session(tmp_path: Path) -> tuple[Session, MemoryNotebook]:
    doc = MemoryNotebook(["a = 1"])
    return Session(doc, Workspace(tmp_path)), doc


def test_steps_whose_cells_a_reload_removed_go_back_to_pending_in_one_line(
    tmp_path: Path,
) -> None:
    session, doc = _session(tmp_path)
    anchor = doc.cells()[0].id
    for n in (1, 2, 3):
        step = session.propose.insert_cell(f"v{n} = {n}", after=anchor)
        assert isinstance(step.operation, InsertCell)
        anchor = step.operation.cell_id
    assert session.approve().ok
    plan = session.current_plan()
    assert plan is not None
    gone = plan.steps[1].operation
    assert isinstance(gone, InsertCell)
    doc.delete_cell(gone.cell_id)  # what a reload from an older file does to step 2

    notes = reconcile(session.store, doc, "the file changed on disk")

    assert notes == [
        f"plan {plan.id}: the file changed on disk; step 2 recorded done was undone by it and "
        "is pending again (approve again)"
    ]
    assert [s.status for s in plan.steps] == ["done", "pending", "done"]
    assert plan.steps[1].error is not None and plan.steps[1].error.startswith("undone: ")


def test_a_record_that_agrees_with_the_cells_says_so(tmp_path: Path) -> None:
    session, doc = _session(tmp_path)
    session.propose.insert_cell("v = 1", after=doc.cells()[0].id)
    assert session.approve().ok

    notes = reconcile(session.store, doc, "the Jupyter server restarted")

    assert notes == [
        "the Jupyter server restarted; the plan was checked against the notebook: they agree"
    ]
    plan = session.current_plan()
    assert plan is not None and [s.status for s in plan.steps] == ["done"]


def test_a_record_put_back_to_an_older_copy_is_reconciled_not_believed(tmp_path: Path) -> None:
    """The live server overwrote the room with the file (as after a restart): the cells and
    the plan record go back to what the file held mid-run (steps approved, the plan
    executing). planbook keeps its own record, settles it with the cells, says so in one line,
    and the plan goes on."""
    session, doc = _session(tmp_path)
    anchor = doc.cells()[0].id
    for n in (1, 2):
        step = session.propose.insert_cell(f"v{n} = {n}", after=anchor)
        assert isinstance(step.operation, InsertCell)
        anchor = step.operation.cell_id
    older: list[object] = []
    # the record as saved when the run began: steps approved, the plan executing
    session.subscribe(
        lambda e: older.append(doc.get_metadata("planbook")) if e.kind == "run_started" else None
    )
    assert session.approve().ok
    plan = session.current_plan()
    assert plan is not None and [s.status for s in plan.steps] == ["done", "done"]

    # the file as it was saved while step 1 was about to run: no new cells, steps approved
    for step in plan.steps:
        assert isinstance(step.operation, InsertCell)
        doc.delete_cell(step.operation.cell_id)
    doc.set_metadata("planbook", older[0])

    plan = session.current_plan()
    assert plan is not None
    assert [s.status for s in plan.steps] == ["pending", "pending"]
    assert any("put back to an older copy" in w and "undone" in w for w in session.warnings), (
        session.warnings
    )
    assert session.approve().ok
    assert [s.status for s in session.current_plan().steps] == ["done", "done"]  # type: ignore[union-attr]
