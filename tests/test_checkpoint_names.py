"""Checkpoints named for people in %checkpoints, the panel and rollback messages."""

from __future__ import annotations

from pathlib import Path

from planbook.documents.memory import MemoryNotebook
from planbook.model.cell import Cell
from planbook.present.checkpoint_names import checkpoint_name
from planbook.sessions.session import Session
from planbook.surfaces.widget.panel import ReviewPanel
from planbook.workspace.files import Workspace


def ran(tmp_path: Path) -> Session:
    cells = [Cell(id=f"c{n}", source=f"x{n} = {n}") for n in range(1, 6)]
    session = Session(MemoryNotebook(cells), Workspace(tmp_path))
    session.propose.edit_cell("#5", "revenue.plot()", reason="plot revenue")
    session.propose.insert_cell("# Results\nmore", after="#1", cell_type="markdown")
    session.propose.write_file("out.txt", "hi\n", reason="")
    session.approve()
    return session


def test_checkpoints_say_step_position_and_reason_or_first_line(tmp_path: Path) -> None:
    session = ran(tmp_path)
    lines = session.checkpoints_text().splitlines()
    assert lines[0].startswith("1. before step 1: edit cell #5, plot revenue  (cp-")
    assert lines[1].startswith("2. before step 2: insert a markdown cell, # Results  (cp-")
    assert lines[2].startswith("3. before step 3: write out.txt  (cp-")
    panel = ReviewPanel(session)
    labels = [c["label"] for c in panel.view["checkpoints"]]
    assert labels[0] == "before step 1: edit cell #5, plot revenue"


def test_a_rollback_is_named_after_what_it_went_back_to(tmp_path: Path) -> None:
    session = ran(tmp_path)
    first = session.checkpoints()[0]
    record = session.rollback(first.id)
    name = checkpoint_name(record, session.store.state.plans, session.checkpoints())
    assert name == "rollback to before step 1: edit cell #5, plot revenue"
    lines = session.checkpoints_text().splitlines()
    assert "[rolled back by 4]" in lines[0]
    assert lines[3].startswith("4. rollback to before step 1: edit cell #5, plot revenue")


def test_a_checkpoint_whose_plan_is_gone_keeps_its_stored_label(tmp_path: Path) -> None:
    session = ran(tmp_path)
    cp = session.checkpoints()[0]
    assert checkpoint_name(cp, [], session.checkpoints()) == cp.label
