"""Conversion between planbook's ``Cell`` and a cell of the shared document (jupyter_ydoc's layout).

Reading: a shared cell's JSON as a ``Cell``. Writing: a ``Cell`` as the nbformat dict
jupyter_ydoc turns into a shared cell (the keys the frontend uses), and a shared cell rewritten
in place by difference, so open editors keep their cursors and unrelated fields.

Number caveat: the shared document stores JSON numbers as floats; integral floats are read back
as ints (as the server does when it saves the file).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from planbook.model.cell import Cell

if TYPE_CHECKING:
    from pycrdt import Map


def json_ints(value: Any) -> Any:
    """Integral floats back to ints (the shared document stores every number as a float)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: json_ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_ints(v) for v in value]
    return value


def to_cell(raw: dict[str, Any]) -> Cell:
    """A shared cell's JSON (``ycell.to_py()``) as a ``Cell``."""
    raw = json_ints(raw)
    cell_type = raw.get("cell_type", "code")
    source = raw.get("source", "")
    return Cell(
        id=str(raw.get("id", "")),
        cell_type=cell_type,
        source="".join(source) if isinstance(source, list) else str(source),
        metadata=dict(raw.get("metadata") or {}),
        outputs=list(raw.get("outputs") or []) if cell_type == "code" else [],
        execution_count=raw.get("execution_count") if cell_type == "code" else None,
        attachments=raw.get("attachments") or None,
    )


def normal(cell: Cell) -> Cell:
    """The cell as it reads back from the shared document (JSON numbers, no outputs on
    markdown), so the local view after a commit equals a fresh read."""
    return to_cell(cell_dict(cell))


def cell_dict(cell: Cell) -> dict[str, Any]:
    """The nbformat dict jupyter_ydoc turns into a shared cell (same keys as the frontend)."""
    out: dict[str, Any] = {
        "id": cell.id,
        "cell_type": cell.cell_type,
        "source": cell.source,
        "metadata": json.loads(json.dumps(cell.metadata)),
    }
    if cell.cell_type == "code":
        out["outputs"] = json.loads(json.dumps(cell.outputs))
        out["execution_count"] = cell.execution_count
    elif cell.attachments:
        out["attachments"] = json.loads(json.dumps(cell.attachments))
    return out


def _youtputs(outputs: list[dict[str, Any]]) -> list[Map[Any]]:
    """Outputs as the frontend stores them: a map each, a stream's text as shared text."""
    from pycrdt import Map, Text  # heavy: pycrdt (the live extra)

    result = []
    for output in json.loads(json.dumps(outputs)):
        if output.get("output_type") == "stream":
            text = output.get("text", "")
            output["text"] = Text("".join(text) if isinstance(text, list) else text)
        result.append(Map(output))
    return result


def write_cell(ynb: Any, index: int, cell: Cell) -> None:
    """Make the shared cell at ``index`` of ``ynb`` (a YNotebook) hold ``cell``, changing only
    what differs, so open editors keep cursors and unrelated fields."""
    from pycrdt import Array, Map  # heavy: pycrdt (the live extra)

    ycell = ynb.ycells[index]
    old = to_cell(ycell.to_py() or {})
    if old.cell_type != cell.cell_type:
        ynb.ycells[index] = ynb.create_ycell(cell_dict(cell))
        return
    if old.source != cell.source:
        ynb.set_cell(index, source=cell.source)
    if old.metadata != cell.metadata:
        ycell["metadata"] = Map(json.loads(json.dumps(cell.metadata)))
    if cell.cell_type == "code":
        if old.outputs != cell.outputs:
            youtputs = ycell.get("outputs")
            if not isinstance(youtputs, Array):
                youtputs = ycell["outputs"] = Array()
            youtputs.clear()
            youtputs.extend(_youtputs(cell.outputs))
        if old.execution_count != cell.execution_count:
            ycell["execution_count"] = cell.execution_count
    elif old.attachments != cell.attachments:
        if cell.attachments:
            ycell["attachments"] = json.loads(json.dumps(cell.attachments))
        elif "attachments" in ycell:
            del ycell["attachments"]
