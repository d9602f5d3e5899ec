"""A cell written into a shared document (as the live backend writes it) reads back as the same
cell: outputs, execution count, metadata and attachments, as JSON, byte for byte. A rewrite by
difference leaves the text (an editor's cursor) alone when only the outputs change. No server:
a local pycrdt document laid out by jupyter_ydoc, which is what the room's copy is."""

from __future__ import annotations

import json
from typing import Any

from jupyter_ydoc import YNotebook
from pycrdt import Doc

from planbook.documents.live.convert import cell_dict, json_ints, to_cell, write_cell
from planbook.model.cell import Cell

CODE = Cell(
    id="c1",
    cell_type="code",
    source="print(1)\nx = 2",
    metadata={"tags": ["keep"], "planbook": {"step": 3}},
    outputs=[
        {"output_type": "stream", "name": "stdout", "text": "1\n"},
        {
            "output_type": "execute_result",
            "execution_count": 7,
            "data": {"text/plain": "2", "image/png": "iVBORw0KGgo="},
            "metadata": {"width": 10},
        },
    ],
    execution_count=7,
)
MARKDOWN = Cell(
    id="m1",
    cell_type="markdown",
    source="![chart](attachment:chart.png)",
    attachments={"chart.png": {"image/png": "iVBORw0KGgo="}},
)


def _json(cell: Cell) -> str:
    return json.dumps(cell.model_dump(), sort_keys=True)


def _notebook(*cells: Cell) -> YNotebook:
    ynb = YNotebook(Doc())
    for cell in cells:
        ynb.ycells.append(ynb.create_ycell(cell_dict(cell)))
    return ynb


def test_cells_with_outputs_and_attachments_read_back_byte_for_byte() -> None:
    ynb = _notebook(CODE, MARKDOWN)
    back = [to_cell(ycell.to_py()) for ycell in ynb.ycells]
    assert [_json(c) for c in back] == [_json(CODE), _json(MARKDOWN)]


def test_numbers_stored_as_floats_read_back_as_the_ints_they_were() -> None:
    stored: Any = {"count": 3.0, "ratio": 0.5, "steps": [1.0, {"n": 2.0}], "name": "x"}
    assert json_ints(stored) == {"count": 3, "ratio": 0.5, "steps": [1, {"n": 2}], "name": "x"}
    assert isinstance(json_ints(stored)["count"], int)


def test_new_outputs_leave_the_text_and_its_editors_alone() -> None:
    ynb = _notebook(CODE)
    text = ynb.ycells[0]["source"]  # (an observer lives as long as this object)
    text_events: list[Any] = []
    subscription = text.observe(text_events.append)
    ran = CODE.model_copy(
        update={
            "outputs": [{"output_type": "stream", "name": "stdout", "text": "again\n"}],
            "execution_count": 8,
        }
    )
    write_cell(ynb, 0, ran)
    assert text_events == []  # the shared text was not touched
    assert _json(to_cell(ynb.ycells[0].to_py())) == _json(ran)
    write_cell(ynb, 0, ran.model_copy(update={"source": "edited"}))
    assert len(text_events) == 1  # (the observer sees a change of the text)
    text.unobserve(subscription)


def test_a_rewrite_removes_attachments_and_changes_a_cell_s_type() -> None:
    ynb = _notebook(MARKDOWN, CODE)
    plain = MARKDOWN.model_copy(update={"source": "no picture", "attachments": None})
    write_cell(ynb, 0, plain)
    assert "attachments" not in ynb.ycells[0].to_py()
    assert _json(to_cell(ynb.ycells[0].to_py())) == _json(plain)
    as_markdown = Cell(id="c1", cell_type="markdown", source="# now prose")
    write_cell(ynb, 1, as_markdown)
    assert _json(to_cell(ynb.ycells[1].to_py())) == _json(as_markdown)
