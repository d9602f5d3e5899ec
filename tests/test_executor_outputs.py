"""A code step's outputs, kept to be put back where a fault lost them (engine/executor/outputs.py):
on a memory notebook whose ``reloads`` the test turns, as a live room's would."""

from __future__ import annotations

from planbook.documents.memory import MemoryNotebook
from planbook.engine.executor.outputs import KeptOutputs
from planbook.engine.runner import CellRun
from planbook.model.cell import Cell

RESULT = [{"output_type": "execute_result", "data": {"text/plain": "3"}, "metadata": {}}]


class Reloading(MemoryNotebook):
    reloads = 0


def ran(doc: Reloading, kept: KeptOutputs) -> Cell:
    """Step "s1" ran cell c1: its outputs kept, then written (as ``_finish_code`` does)."""
    cell = doc.cells()[0]
    run = CellRun(outputs=RESULT, execution_count=7)
    kept.keep("s1", cell, run)
    doc.replace_cell(cell.model_copy(update={"outputs": RESULT, "execution_count": 7}))
    return cell


def lose(doc: Reloading, cell: Cell) -> None:
    """The room comes back without the outputs (a reload from a file saved before them)."""
    doc.replace_cell(cell)
    doc.reloads += 1


def test_outputs_a_reload_lost_are_written_back() -> None:
    doc = Reloading([Cell(id="c1", source="x = 1")])
    kept = KeptOutputs(doc)
    cell = ran(doc, kept)
    lose(doc, cell)
    assert kept.restorable()
    assert kept.restore(lambda _step: True) == ["s1"]
    back = doc.cells()[0]
    assert back.outputs == RESULT and back.execution_count == 7


def test_saved_outputs_cleared_by_a_person_stay_cleared_until_a_reload() -> None:
    doc = Reloading([Cell(id="c1", source="x = 1")])
    kept = KeptOutputs(doc)
    cell = ran(doc, kept)
    kept.saved_with("s1")
    doc.replace_cell(cell)  # the person clears the outputs, no fault
    assert not kept.restorable()
    assert kept.restore(lambda _step: True) == []
    assert doc.cells()[0].outputs == []


def test_a_cell_changed_otherwise_keeps_what_it_has() -> None:
    doc = Reloading([Cell(id="c1", source="x = 1")])
    kept = KeptOutputs(doc)
    cell = ran(doc, kept)
    lose(doc, cell)
    doc.replace_cell(cell.model_copy(update={"source": "x = 2"}))  # edited since
    assert kept.restore(lambda _step: True) == []
    assert doc.cells()[0].outputs == []
    assert len(kept) == 0  # moot: forgotten


def test_a_step_not_settled_gets_nothing() -> None:
    doc = Reloading([Cell(id="c1", source="x = 1")])
    kept = KeptOutputs(doc)
    cell = ran(doc, kept)
    lose(doc, cell)
    assert kept.restore(lambda _step: False) == []
    assert doc.cells()[0].outputs == []
