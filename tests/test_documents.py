from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planbook.documents.base import NotebookDocument
from planbook.documents.file import FileNotebook
from planbook.documents.memory import MemoryNotebook
from planbook.errors import MetadataError, UnknownCell
from planbook.model.cell import Cell
from tests.conftest import make_notebook, sources


@pytest.fixture(params=["memory", "file"])
def doc(request: pytest.FixtureRequest, tmp_path: Path) -> NotebookDocument:
    if request.param == "memory":
        return MemoryNotebook([Cell(id="c1", source="a"), Cell(id="c2", source="b")])
    return FileNotebook(make_notebook(tmp_path / "n.ipynb", ["a", "b"]))


def ids(doc: NotebookDocument) -> list[str]:
    return [c.id for c in doc.cells()]


def test_every_operation_by_cell_id(doc: NotebookDocument) -> None:
    assert isinstance(doc, NotebookDocument)
    doc.insert_cell(1, Cell(id="new", source="n", cell_type="markdown"))
    assert ids(doc) == ["c1", "new", "c2"]
    doc.replace_cell(
        Cell(
            id="c2",
            source="B",
            outputs=[{"output_type": "stream", "name": "stdout", "text": "hi"}],
            execution_count=3,
        )
    )
    c2 = doc.cells()[2]
    assert (c2.source, c2.execution_count, c2.outputs[0]["text"]) == ("B", 3, "hi")
    doc.move_cell("c2", 0)
    assert ids(doc) == ["c2", "c1", "new"]
    doc.delete_cell("c1")
    assert ids(doc) == ["c2", "new"]
    with pytest.raises(UnknownCell, match="no cell with id 'zzz'"):
        doc.delete_cell("zzz")


def test_a_failed_transaction_applies_nothing(doc: NotebookDocument) -> None:
    before = doc.cells()
    with pytest.raises(RuntimeError), doc.transaction():
        doc.delete_cell("c1")
        doc.set_metadata("planbook", {"x": 1})
        raise RuntimeError("boom")
    assert doc.cells() == before
    assert doc.get_metadata("planbook") is None


def test_file_backend_saves_atomically_and_sees_outside_edits(tmp_path: Path) -> None:
    path = make_notebook(tmp_path / "n.ipynb", ["a", "b"])
    doc = FileNotebook(path)
    doc.replace_cell(Cell(id="c1", source="changed"))
    assert sources(path) == [("c1", "changed"), ("c2", "b")]
    nb = nbformat.read(path, as_version=4)
    nb.cells[1].source = "edited elsewhere"
    nbformat.write(nb, path)
    assert doc.cells()[1].source == "edited elsewhere"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["n.ipynb"]


def test_old_notebooks_get_cell_ids_with_the_first_change_only(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook(nbformat_minor=4)
    nb.cells = [nbformat.v4.new_code_cell("a"), nbformat.v4.new_markdown_cell("b")]
    for cell in nb.cells:
        cell.pop("id", None)
    path = tmp_path / "old.ipynb"
    path.write_text(
        nbformat.writes(nb, version=4).replace('"nbformat_minor": 5', '"nbformat_minor": 4')
    )
    before = path.read_bytes()
    doc = FileNotebook(path)
    ids_in_memory = [c.id for c in doc.cells()]
    doc.get_metadata("planbook")
    with doc.transaction():
        pass
    assert path.read_bytes() == before  # reading (and an empty transaction) never writes
    # A second reader (another kernel, the CLI) sees the same ids before the first save.
    assert [c.id for c in FileNotebook(path).cells()] == ids_in_memory
    doc.set_metadata("planbook", {"mode": "plan"})
    saved = nbformat.read(path, as_version=4)
    assert [c["id"] for c in saved.cells] == ids_in_memory
    assert saved.nbformat_minor == 5
    nbformat.validate(saved)


#: One change to a notebook of cells named "c<n>": (what, a cell's number, where to).
_CHANGES = st.lists(
    st.tuples(
        st.sampled_from(["insert", "delete", "move", "replace", "failed", "outside"]),
        st.integers(0, 12),
        st.integers(0, 12),
    ),
    max_size=25,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(changes=_CHANGES)
def test_a_cell_is_found_where_it_is_after_any_sequence_of_changes(
    tmp_path: Path, changes: list[tuple[str, int, int]]
) -> None:
    """``find_cell`` answers from an index of the cells' positions: after inserts, deletes,
    moves, replaced cells, a transaction that failed half-way and an edit made outside (the
    file rewritten by another program), every cell is found at the place ``cells()`` shows,
    with its own source and the id of the cell above it, and a cell that is gone is not."""
    path = make_notebook(tmp_path / "found.ipynb", ["a", "b", "c"])
    for doc in (
        FileNotebook(path),
        MemoryNotebook([Cell(id=f"c{i}", source=s) for i, s in ((1, "a"), (2, "b"), (3, "c"))]),
    ):
        made = 3
        for what, n, to in changes:
            present = ids(doc)
            target = present[n % len(present)] if present else None
            if what == "insert" or target is None:
                made += 1
                doc.insert_cell(to, Cell(id=f"c{made}", source=f"new {made}"))
            elif what == "delete":
                doc.delete_cell(target)
            elif what == "move":
                doc.move_cell(target, to)
            elif what == "replace":
                doc.replace_cell(Cell(id=target, source=f"replaced {to}"))
            elif what == "failed":
                with pytest.raises(RuntimeError), doc.transaction():
                    doc.move_cell(target, to)
                    doc.delete_cell(target)
                    raise RuntimeError("boom")
            elif isinstance(doc, FileNotebook):  # another program reorders the file
                nb = nbformat.read(path, as_version=4)
                nb.cells.insert(to % (len(nb.cells) + 1), nb.cells.pop(n % len(nb.cells)))
                nbformat.write(nb, path)
            cells = doc.cells()
            for i, cell in enumerate(cells):
                place = doc.find_cell(cell.id)
                assert place is not None, f"{cell.id} is in the notebook but was not found"
                assert (place.index, place.cell.source) == (i, cell.source)
                assert place.above == (cells[i - 1].id if i else None)
            for gone in {f"c{k}" for k in range(1, made + 1)} - {c.id for c in cells}:
                assert doc.find_cell(gone) is None
                with pytest.raises(UnknownCell):
                    doc.move_cell(gone, 0)


def test_missing_or_broken_notebook_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(MetadataError, match="does not exist"):
        FileNotebook(tmp_path / "nope.ipynb")
    (tmp_path / "bad.ipynb").write_text("{not json")
    with pytest.raises(MetadataError, match="not a readable notebook"):
        FileNotebook(tmp_path / "bad.ipynb")
