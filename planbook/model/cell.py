"""One notebook cell as every floor sees it (nbformat 4.5 terms, with its id), and how a person
recognises one: a short id, its first line, its tags."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

from pydantic import ConfigDict, Field

from planbook.model.base import PlanbookModel

CellType = Literal["code", "markdown", "raw"]


class Cell(PlanbookModel):
    """One cell, in nbformat 4.5 terms (outputs are nbformat output dicts)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    cell_type: CellType = "code"
    source: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)
    outputs: list[dict[str, Any]] = Field(default_factory=list)
    execution_count: int | None = None
    attachments: dict[str, Any] | None = None


class CellOutline(NamedTuple):
    """What staging reads of a cell: its id, type and source (a ``Cell`` has the same three),
    without copying its outputs and metadata: staging on 2,000 cells copied every cell per
    step (``NotebookDocument.outline``)."""

    id: str
    cell_type: CellType
    source: str


#: A cell as a projection reads it: a whole ``Cell`` or its outline.
CellText = Cell | CellOutline


#: ``%plan cells`` shows ids this long at least (longer where that is not yet unique)...
SHORT_ID = 8
#: ...and ids up to this long whole: those are names people gave (``load-penguins``), not the
#: front end's random UUIDs.
WHOLE_ID = 16


def first_line(source: str, width: int = 60) -> str:
    line = next((x.strip() for x in source.splitlines() if x.strip()), "")
    return line if len(line) <= width else line[: width - 1] + "…"


def short_ids(ids: Sequence[str]) -> dict[str, str]:
    """Each id cut to the shortest prefix of at least ``SHORT_ID`` characters that no other id
    shares: what a person can copy from ``%plan cells`` and paste as an anchor.

    The other id sharing the longest prefix with an id is next to it in sorted order, so one
    sort finds every prefix (comparing each id with all others took seconds on 2,000 cells
    with the front end's 36-character ids)."""
    if all(len(cell_id) <= WHOLE_ID for cell_id in ids):
        return {cell_id: cell_id for cell_id in ids}
    ordered = sorted(set(ids))
    at = {cell_id: k for k, cell_id in enumerate(ordered)}
    out: dict[str, str] = {}
    for cell_id in ids:
        if len(cell_id) <= WHOLE_ID:
            out[cell_id] = cell_id
            continue
        k = at[cell_id]
        shared = max(
            (_common(cell_id, ordered[n]) for n in (k - 1, k + 1) if 0 <= n < len(ordered)),
            default=0,
        )
        out[cell_id] = cell_id[: min(len(cell_id), max(SHORT_ID, shared + 1))]
    return out


def _common(a: str, b: str) -> int:
    """How many first characters ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def tags_of(cell: Cell) -> list[str]:
    tags = cell.metadata.get("tags") if isinstance(cell.metadata, dict) else None
    return [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []
