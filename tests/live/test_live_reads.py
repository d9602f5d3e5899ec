"""What a step reads of a live notebook (issue 10 item 8): its targets, looked up by id, not
every cell converted and copied. Counted, not timed: the cells planbook converts from the
shared document and copies for the engine during a one-step approval are the same for a
notebook of 10 cells and of 200; someone typing in one cell makes planbook convert that cell
again, not the notebook, and what it reads stays what the room holds."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from planbook.documents.live import convert, document, operations, reads
from planbook.documents.live.document import LiveNotebook, open_live
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace
from tests.live.yclient import YClient
from tests.support.jupyter_server import RunningServer

pytestmark = pytest.mark.server

_names = itertools.count(1)


@contextmanager
def counting(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """How many cells the live backend converts (``convert.to_cell``, wherever it is called)
    and copies (``document._own_copy``)."""
    counts = {"converted": 0, "copied": 0}

    def counted(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any) -> Any:
            counts[name] += 1
            return original(*args)

        return wrapper

    with monkeypatch.context() as patch:
        converted = counted("converted", convert.to_cell)
        for module in (convert, reads, operations):
            patch.setattr(module, "to_cell", converted)
        patch.setattr(document, "_own_copy", counted("copied", document._own_copy))
        yield counts


def fresh_read(doc: LiveNotebook) -> list[dict[str, Any]]:
    """Every cell converted again from the shared document (no cache)."""
    doc._reads.forget_cells()
    return [c.model_dump() for c in doc.cells()]


def one_step_approval(server: RunningServer, size: int, monkeypatch: pytest.MonkeyPatch) -> dict:
    """Stage an edit of the middle cell and an insert after it; count what approving reads."""
    name = f"reads-{size}-{next(_names)}.ipynb"
    server.write_notebook(name, [f"x{i} = {i}" for i in range(size)])
    doc = open_live(server.url, server.token, name)
    try:
        session = Session(doc, Workspace(server.root))
        middle = doc.cells()[size // 2].id
        session.propose.edit_cell(middle, "x = 'edited'", reason="reads")
        session.propose.insert_cell("y = 2", after=middle, reason="reads")
        with counting(monkeypatch) as counts:
            report = session.approve()
        assert report.ok, report.lines()
        sources = [c.source for c in doc.cells()]
        assert sources[size // 2 : size // 2 + 2] == ["x = 'edited'", "y = 2"]
        assert len(sources) == size + 1
        return counts
    finally:
        doc.close()


def test_an_approval_reads_its_targets_not_the_notebook(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    small = one_step_approval(server, 10, monkeypatch)
    large = one_step_approval(server, 200, monkeypatch)
    assert large == small, (small, large)
    # a handful per step (the drift check, the checkpoint, the change, the commit's check),
    # far below one notebook's worth
    assert large["converted"] + large["copied"] < 40, large


def test_someone_typing_in_one_cell_converts_that_cell_again(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"typing-{next(_names)}.ipynb"
    server.write_notebook(name, [f"x{i} = {i}" for i in range(200)])
    doc = open_live(server.url, server.token, name)
    other = YClient(server, name)
    try:
        ids = [c.id for c in doc.cells()]
        with counting(monkeypatch) as counts:
            for n in range(3):
                other.set_source(ids[7], f"typed {n}")
                assert doc.wait_for(lambda cells, n=n: cells[7].source == f"typed {n}")
        assert 1 <= counts["converted"] <= 6, counts  # that cell, once per change seen
        assert [c.model_dump() for c in doc.cells()] == fresh_read(doc)
        # cells added by someone else: everything is read again, and right
        new = {"cell_type": "markdown", "source": "new", "metadata": {}}
        other.edit(lambda ynb: ynb.ycells.insert(3, ynb.create_ycell(new)))
        assert doc.wait_for(lambda cells: len(cells) == 201)
        assert doc.cells()[3].source == "new"
        assert [c.model_dump() for c in doc.cells()] == fresh_read(doc)
        # and typing after that is again read by the cell
        other.set_source(ids[150], "late")
        assert doc.wait_for(lambda cells: cells[151].source == "late")
        assert [c.model_dump() for c in doc.cells()] == fresh_read(doc)
    finally:
        other.close()
        doc.close()


def test_the_cells_order_planbook_keeps_after_its_commits_is_the_rooms(
    server: RunningServer,
) -> None:
    """A commit keeps the cells and ids it made (its own check computed both) instead of
    reading them back: after inserts, a move and a delete, in one transaction and in several,
    every way planbook reads the order gives the shared document's, and so does a fresh read."""
    from planbook.model.cell import Cell

    name = f"order-{next(_names)}.ipynb"
    server.write_notebook(name, [f"x{i} = {i}" for i in range(30)])
    doc = open_live(server.url, server.token, name)
    try:
        ids = [c.id for c in doc.cells()]
        doc.insert_cell(3, Cell(id="new-a", source="a"))
        with doc.transaction():
            doc.insert_cell(0, Cell(id="new-b", source="b"))
            doc.move_cell(ids[20], 1)
            doc.delete_cell(ids[5])
        doc.move_cell("new-a", 29)
        doc.delete_cell(ids[0])

        with doc._room.cond:
            in_room = [str(c["id"]) for c in doc._room.cells]
            kept = doc._reads.cell_ids()
        assert sorted(in_room) == sorted({*ids, "new-a", "new-b"} - {ids[0], ids[5]})
        assert in_room[:2] == ["new-b", ids[20]] and in_room != sorted(in_room)
        assert kept == in_room
        assert [c.id for c in doc.outline()] == in_room
        where = in_room.index("new-a")
        assert where > 20 and doc.find_cell("new-a").index == where  # type: ignore[union-attr]
        assert [c["id"] for c in fresh_read(doc)] == in_room
    finally:
        doc.close()
