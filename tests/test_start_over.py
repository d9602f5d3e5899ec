"""``%plan reset`` / ``pb.reset()``: every step still in effect is undone and planbook's record
of the notebook forgotten, so a tutorial runs again from the same page; a cell edited after
its step ran refuses it in one line (unless forced) and nothing changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planbook.errors import RollbackConflict
from planbook.sessions.session import Session
from tests.conftest import reopen, sources


def test_reset_undoes_what_is_in_effect_and_forgets_the_record(
    session: Session, nb_path: Path
) -> None:
    original = nb_path.read_text()
    session.propose.edit_cell("c2", "x = 2", reason="two")
    session.propose.insert_cell("y = 3", after="c1", reason="new")
    session.propose.write_file("notes.md", "# notes\n", reason="notes")
    session.propose.delete_cell("c3", reason="gone")
    assert session.approve("1-3").ok  # the delete stays pending
    session.rollback()  # the file step is undone already: only two are still in effect
    session.set_mode("act")

    assert session.reset() == 2
    assert [s for _, s in sources(nb_path)] == ["import math", "x = 1", "print(x + 1)"]
    assert not (nb_path.parent / "notes.md").exists()
    assert session.current_plan() is None and session.checkpoints() == []
    assert session.mode == "plan"
    saved = json.loads(nb_path.read_text())["metadata"].get("planbook", {})
    assert not saved.get("plans") and not saved.get("checkpoints")
    assert reopen(nb_path).current_plan() is None  # the file says the same
    # ...and again: nothing in effect, nothing to forget; the cells are those it started with
    assert session.reset() == 0
    assert [c["source"] for c in json.loads(nb_path.read_text())["cells"]] == [
        c["source"] for c in json.loads(original)["cells"]
    ]
    # a tutorial's numbering starts again: checkpoint 1 is the new run's first
    session.propose.edit_cell("c2", "x = 5", reason="five")
    assert session.approve().ok
    assert session.rollback("1").undid


def test_a_cell_edited_after_its_step_refuses_a_reset_until_forced(
    session: Session, nb_path: Path
) -> None:
    session.propose.edit_cell("c2", "x = 2", reason="two")
    assert session.approve().ok
    edited = json.loads(nb_path.read_text())
    edited["cells"][1]["source"] = "x = 2  # mine"
    nb_path.write_text(json.dumps(edited, indent=1))
    before = nb_path.read_bytes()
    with pytest.raises(RollbackConflict) as refused:
        session.reset()
    message = str(refused.value)
    assert "starting over would overwrite that" in message and "\n" not in message
    assert "pb.reset(force=True)" in message  # said in the words of the API in use
    assert nb_path.read_bytes() == before
    assert session.reset(force=True) == 1
    assert [s for _, s in sources(nb_path)][1] == "x = 1"
