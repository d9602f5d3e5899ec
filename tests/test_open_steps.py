"""A proposal an open step already makes is given back, and a cell an open step deletes is
refused, from an index of the open steps kept between proposals (sessions/already_staged.py):
these check the index follows the plan when steps change status, revisions fork, or a step's
operation does not hash."""

from __future__ import annotations

from pathlib import Path

import pytest

from planbook.errors import UsageMistake
from planbook.model.operations import EditFile, TextEdit
from planbook.model.plan import Plan, Step
from planbook.sessions.already_staged import OpenSteps
from planbook.sessions.session import Session


def test_a_skipped_step_is_no_longer_the_same_change(session: Session) -> None:
    first = session.propose.edit_cell("c2", "x = 2", reason="r")
    assert session.propose.edit_cell("c2", "x = 2", reason="r") is first
    session.skip(1)
    again = session.propose.edit_cell("c2", "x = 2", reason="r")
    assert again is not first and len(session.current_plan().steps) == 2  # type: ignore[union-attr]
    session.unskip(1)  # step 1 is open again, and comes first
    assert session.propose.edit_cell("c2", "x = 2", reason="r").id == first.id


def test_a_cell_being_deleted_is_refused_until_its_step_is_skipped(session: Session) -> None:
    session.propose.edit_cell("c1", "import os", reason="r")
    session.propose.delete_cell("c3", reason="r")
    with pytest.raises(UsageMistake, match=r"cell 'c3' is to be deleted by step 2 \(pending\)"):
        session.propose.edit_cell("c3", "print(2)", reason="r")
    with pytest.raises(UsageMistake, match="to be deleted by step 2"):
        session.propose.insert_cell("y = 3", after="c3", reason="r")
    session.skip(2)
    step = session.propose.edit_cell("c3", "print(2)", reason="r")
    assert session.current_plan().steps[-1] is step  # type: ignore[union-attr]


def test_after_an_approval_the_next_revisions_steps_are_the_ones_looked_at(
    session: Session, nb_path: Path
) -> None:
    session.propose.edit_cell("c1", "import os", reason="r")
    assert session.approve().ok
    # step 1 is done: the same change again is a new step, in the plan's next revision
    again = session.propose.edit_cell("c1", "import os", reason="r")
    assert again.status == "pending"
    assert session.propose.edit_cell("c1", "import os", reason="r") is again


def test_an_operation_that_does_not_hash_is_still_found() -> None:
    """Every operation hashes today (frozen, tuples); one holding a list is compared one by
    one, in step order with the hashed ones."""
    edit = TextEdit(search="a", replace="b")
    unhashable = EditFile.model_construct(path="f.txt", edits=[edit])  # type: ignore[arg-type]
    plan = Plan(task="t")
    plan.current.steps = [
        Step(operation=unhashable, base="x"),
        Step(operation=EditFile(path="f.txt", edits=(edit,)), base="x"),
    ]
    index = OpenSteps().of(plan)
    found = index.same_step(EditFile.model_construct(path="f.txt", edits=[edit]), False)  # type: ignore[arg-type]
    assert found is not None and found[0] == 1
    assert index.same_step(EditFile(path="f.txt", edits=(edit,)), False) == (2, plan.steps[1])
    assert index.same_step(EditFile(path="f.txt", edits=(edit,)), True) is None
