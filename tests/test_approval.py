"""One meaning for a number: ``approve(4)``, ``"4"`` and ``[4]`` are step 4 everywhere; the first
n pending is ``first=n``. Anything that is not a selection is a one-line UsageMistake that
changes nothing."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planbook.documents.memory import MemoryNotebook
from planbook.errors import UsageMistake
from planbook.model.cell import Cell
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace


def staged(tmp_path: Path, count: int = 4) -> Session:
    session = Session(MemoryNotebook([Cell(id="c1", source="x = 1")]), Workspace(tmp_path))
    for n in range(count):
        session.propose.insert_cell(f"v{n} = {n}", reason=f"v{n}")
    return session


def statuses(session: Session) -> list[str]:
    return [s.status for s in session.current_plan().steps]


@pytest.mark.parametrize("spec", [3, "3", "#3", [3], (3,), "3-3"])
def test_every_spelling_of_a_number_is_that_step(tmp_path: Path, spec: Any) -> None:
    session = staged(tmp_path)
    session.approve(spec)
    assert statuses(session) == ["pending", "pending", "done", "pending"]


def test_first_n_is_the_first_n_pending_for_approve_and_reject(tmp_path: Path) -> None:
    session = staged(tmp_path)
    session.approve(2)
    session.approve(first=2)  # steps 1 and 3: the first two still pending
    assert statuses(session) == ["done", "done", "done", "pending"]
    session = staged(tmp_path)
    session.reject(first=3)
    assert statuses(session) == ["rejected", "rejected", "rejected", "pending"]
    session.reject(4)
    assert statuses(session) == ["rejected"] * 4


BAD = [
    ({"steps": False}, r"`False` is not a step selection"),
    ({"steps": True}, r"`True` is not a step selection"),
    ({"steps": 2.0}, r"`2.0` is not a step selection"),
    ({"steps": -1}, r"step numbers start at 1, so `-1`"),
    ({"steps": 0}, r"start at 1"),
    ({"steps": [1, True]}, r"`True` is not a step number"),
    ({"steps": [1, "2"]}, r"`'2'` is not a step number"),
    ({"steps": {"a": 1}}, r"is not a step selection"),
    ({"steps": "-2"}, r"`-2` is not a step number"),
    ({"steps": "1.5"}, r"`1.5` is not a step number"),
    ({"steps": 9}, r"there is no step 9: steps are numbered 1 to 4"),
    ({"first": 0}, r"first=0: give a count of 1 or more"),
    ({"first": -3}, r"first=-3"),
    ({"first": False}, r"first=False is not a count"),
    ({"first": 1.0}, r"first=1.0 is not a count"),
    ({"first": 9}, r"there are only 4 pending steps, not 9"),
    ({"steps": 1, "first": 1}, r"either steps or first"),
]


@pytest.mark.parametrize(("kwargs", "message"), BAD)
@pytest.mark.parametrize("verb", ["approve", "reject"])
def test_what_is_not_a_selection_is_refused_in_one_line(
    tmp_path: Path, verb: str, kwargs: dict[str, Any], message: str
) -> None:
    session = staged(tmp_path)
    if verb == "reject" and kwargs.get("first") == 9:
        message = r"there are only 4 pending/skipped steps, not 9"
    with pytest.raises(UsageMistake, match=message) as caught:
        getattr(session, verb)(**kwargs)
    assert "\n" not in str(caught.value)
    assert statuses(session) == ["pending"] * 4
    assert [c.source for c in session.cells()] == ["x = 1"]


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.skip(1.5),
        lambda s: s.skip("2"),
        lambda s: s.unskip(None),
        lambda s: s.move(True, before=2),
        lambda s: s.move(1, before=2.5),
    ],
)
def test_skip_and_move_take_step_numbers_only(tmp_path: Path, call: Any) -> None:
    session = staged(tmp_path)
    order = [s.id for s in session.current_plan().steps]
    with pytest.raises(UsageMistake, match=r"is not a step number") as caught:
        call(session)
    assert "\n" not in str(caught.value)
    assert [s.id for s in session.current_plan().steps] == order
    assert statuses(session) == ["pending"] * 4


def test_a_bad_argument_is_refused_even_when_nothing_is_pending(tmp_path: Path) -> None:
    session = staged(tmp_path, count=1)
    session.approve()
    with pytest.raises(UsageMistake, match="not a step selection"):
        session.approve(False)


@settings(max_examples=60, deadline=None)
@given(
    st.one_of(
        st.integers(-5, 10),
        st.floats(allow_nan=True),
        st.booleans(),
        st.text(max_size=6),
        st.lists(st.one_of(st.integers(-2, 6), st.booleans(), st.none()), max_size=4),
        st.none(),
    )
)
def test_any_argument_either_selects_existing_steps_or_changes_nothing(spec: Any) -> None:
    """Whatever is passed, approve runs only steps it names or raises a UsageMistake."""
    with tempfile.TemporaryDirectory() as folder:
        session = staged(Path(folder), count=3)
        try:
            session.approve(spec)
        except UsageMistake as exc:
            assert "\n" not in str(exc)
            assert statuses(session) == ["pending"] * 3
            return
        done = [n for n, s in enumerate(statuses(session), 1) if s == "done"]
        if spec is None:
            assert done == [1, 2, 3]
        else:
            assert done, spec
            assert all(1 <= n <= 3 for n in done)


def test_the_approval_hash_binds_every_change_to_an_approved_step(tmp_path: Path) -> None:
    """The hash is over the canonical JSON of the approved steps, whatever was cached from an
    earlier check: changing a step's base, operation or id after a check changes it."""
    from planbook.engine.approval import approval_hash, step_payload
    from planbook.engine.hashing import canonical_json, sha256
    from planbook.model.operations import InsertCell

    session = staged(tmp_path, 3)
    steps = session.current_plan().steps
    first = approval_hash(steps)
    assert first == sha256(canonical_json([step_payload(s) for s in steps]))
    assert approval_hash(steps) == first  # from the remembered texts: the same
    steps[1].base = "0" * 64
    changed = approval_hash(steps)
    assert changed != first
    assert changed == sha256(canonical_json([step_payload(s) for s in steps]))
    op = steps[2].operation
    assert isinstance(op, InsertCell)
    steps[2].operation = op.model_copy(update={"source": "import os"})
    assert approval_hash(steps) not in (first, changed)
    assert approval_hash(steps) == sha256(canonical_json([step_payload(s) for s in steps]))
