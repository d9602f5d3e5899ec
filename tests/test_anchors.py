"""Cells addressed as people see them: id, unique prefix, #position, tag; inserts after one cell
keep plan order; ambiguous or unknown names are refused in one line naming the candidates."""

from __future__ import annotations

from pathlib import Path

import pytest

from planbook.documents.memory import MemoryNotebook
from planbook.engine.anchors import resolve
from planbook.errors import PlanbookError
from planbook.model.cell import Cell, short_ids
from planbook.sessions.session import Session
from planbook.surfaces.plan_verbs import cells_listing
from planbook.workspace.files import Workspace

CELLS = [
    Cell(id="7f3a9c21-0000-4000-8000-000000000001", source="import pandas as pd"),
    Cell(id="load", source="df = pd.read_csv('sales.csv')", metadata={"tags": ["data"]}),
    Cell(id="7f3a9c21-0000-4000-8000-000000000003", source="df.describe()"),
    Cell(id="b0b0b0b0", cell_type="markdown", source="# Plot\n", metadata={"tags": ["fig"]}),
    Cell(id="c0c0c0c0", source="df.plot()", metadata={"tags": ["fig"]}),
]


@pytest.fixture
def session(tmp_path: Path) -> Session:
    return Session(MemoryNotebook([c.model_copy(deep=True) for c in CELLS]), Workspace(tmp_path))


@pytest.mark.parametrize(
    ("token", "cell_id"),
    [
        ("load", "load"),  # an exact id wins over everything
        ("#1", CELLS[0].id),
        ("#5", "c0c0c0c0"),
        ("data", "load"),  # a tag
        ("b0b0", "b0b0b0b0"),  # a unique prefix
        ("7f3a9c21-0000-4000-8000-000000000003", CELLS[2].id),
        ("  #3 ", CELLS[2].id),
    ],
)
def test_a_cell_is_found_by_id_position_tag_or_prefix(token: str, cell_id: str) -> None:
    assert resolve(token, CELLS) == cell_id


@pytest.mark.parametrize(
    ("token", "message"),
    [
        ("7f3a", r"`7f3a` starts 2 cell ids \(#1 7f3a9c21-0000-4000-8000-000000000001 \(import"),
        ("fig", r"the tag `fig` is on 2 cells \(#4 b0b0b0b0 \(# Plot\), #5 c0c0c0c0"),
        ("#0", r"there is no cell #0: the notebook has 5 cells"),
        ("#6", r"there is no cell #6"),
        ("nope", r"no cell with id 'nope'.*`pb.cells\(\)`"),
        ("b0b", r"no cell with id 'b0b'"),  # too short to be a prefix
        ("", r"does not name a cell"),
    ],
)
def test_ambiguous_or_unknown_names_are_one_line_refusals(token: str, message: str) -> None:
    with pytest.raises(PlanbookError, match=message) as caught:
        resolve(token, CELLS)
    assert "\n" not in str(caught.value)


def test_short_ids_grow_until_they_are_unique() -> None:
    short = short_ids([c.id for c in CELLS])
    assert short["load"] == "load" and short["b0b0b0b0"] == "b0b0b0b0"
    assert short[CELLS[0].id] == CELLS[0].id  # the two 7f3a9c21-... differ only at the end
    uuid = "0123456789ab-4000-8000-aaaaaaaaaaaa"
    assert short_ids([uuid, "load-penguins"]) == {
        uuid: "01234567",
        "load-penguins": "load-penguins",  # a name a person gave is shown whole
    }


def test_plan_cells_lists_position_short_id_tags_and_first_line() -> None:
    listing = cells_listing(list(CELLS)).splitlines()
    assert listing[1].split() == ["#2", "load", "[data]", "df", "=", "pd.read_csv('sales.csv')"]
    assert listing[3].split()[:4] == ["#4", "b0b0b0b0", "(markdown)", "[fig]"]
    assert "position (#3)" in listing[-1]


def test_the_api_takes_the_same_names_and_records_the_id(session: Session) -> None:
    session.propose.edit_cell("#3", "df.describe().T", reason="transpose")
    session.propose.insert_cell("df.head()", after="data", reason="peek")
    session.propose.run_cell("c0c0", reason="plot")
    session.propose.delete_cell("#4", reason="no title")
    ops = [s.operation for s in session.current_plan().steps]
    assert ops[0].cell_id == CELLS[2].id  # type: ignore[union-attr]
    assert ops[1].after == "load"  # type: ignore[union-attr]
    assert ops[2].cell_id == "c0c0c0c0"  # type: ignore[union-attr]
    assert ops[3].cell_id == "b0b0b0b0"  # type: ignore[union-attr]


def test_a_cell_a_staged_step_inserts_is_reachable_by_its_id_prefix(session: Session) -> None:
    step = session.propose.insert_cell("total = df.sum()", after="#5", reason="total")
    new_id = step.operation.cell_id  # type: ignore[union-attr]
    session.propose.run_cell(new_id[:6], reason="run it")
    assert session.current_plan().steps[1].operation.cell_id == new_id  # type: ignore[union-attr]
    assert session.current_plan().steps[1].depends_on == (step.id,)


def test_several_inserts_after_one_cell_land_in_plan_order(session: Session) -> None:
    for n in range(4):
        session.propose.insert_cell(f"step_{n} = {n}", after="load", reason=f"{n}")
    # they do not depend on each other: rejecting one leaves the others approvable
    assert all(not s.depends_on for s in session.current_plan().steps)
    session.approve()
    sources = [c.source for c in session.cells()]
    assert sources[1:6] == ["df = pd.read_csv('sales.csv')", *(f"step_{n} = {n}" for n in range(4))]
    assert sources[6] == "df.describe()"


def test_inserts_after_the_last_cell_keep_plan_order_too(session: Session) -> None:
    for n in range(3):
        session.propose.insert_cell(f"tail_{n}", after="#5", reason="")
    session.reject(2)
    session.approve()
    assert [c.source for c in session.cells()][-2:] == ["tail_0", "tail_2"]


def test_naming_a_cell_after_staged_file_steps(session: Session) -> None:
    """File steps are not replayed to name a cell (no file is read for that)."""
    session.propose.write_file("notes.txt", "a\n", reason="notes")
    session.propose.edit_file("notes.txt", [{"search": "a", "replace": "b"}], reason="edit")
    step = session.propose.delete_cell("#4", reason="no title")
    assert step.operation.cell_id == "b0b0b0b0"  # type: ignore[union-attr]
