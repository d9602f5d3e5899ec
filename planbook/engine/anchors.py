"""Cells addressed the way people see them: an id, a unique id prefix, a position (``#5``, as
``%plan cells`` shows it) or a cell tag, resolved to one cell id, or refused in one line that
names the candidates.

Positions and tags are read from the notebook as it is (what ``%plan cells`` lists); ids and
prefixes also reach cells that pending steps insert, so a later step can build on them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from planbook.errors import UnknownCellName, UsageMistake
from planbook.model.cell import Cell, CellText, first_line, short_ids, tags_of
from planbook.model.words import count

#: A prefix shorter than this is too easily a typo that happens to match.
MIN_PREFIX = 4
_POSITION = re.compile(r"^#(\d+)$")


def is_position(token: str) -> bool:
    """``#N``: a position, which only ever names a cell of the notebook as it is."""
    return _POSITION.match(token.strip()) is not None


def at_position(token: str, cells: Sequence[CellText]) -> str:
    """The id of the cell at position ``token`` (``#N``, ``is_position``) among ``cells``, the
    notebook's cells in order (their outline is enough: documents/base.py)."""
    found = _POSITION.match(token.strip())
    if found is None:
        raise UsageMistake(f"`{token}` is not a position like #3")
    number = int(found.group(1))
    if not 1 <= number <= len(cells):
        raise UsageMistake(
            f"there is no cell {token.strip()}: the notebook has {count(cells, 'cell')}, "
            "numbered as `%plan cells` shows them"
        )
    return cells[number - 1].id


def describe(cells: Sequence[Cell], cell_id: str) -> str:
    """``#3 a1b2c3d4 (df.describe())``: how a person recognises a cell."""
    for number, cell in enumerate(cells, start=1):
        if cell.id == cell_id:
            short = short_ids([c.id for c in cells])[cell_id]
            text = first_line(cell.source, 30)
            return f"#{number} {short}" + (f" ({text})" if text else "")
    return cell_id


def resolve(token: str, cells: Sequence[Cell], pending_ids: Sequence[str] = ()) -> str:
    """The id of the one cell ``token`` names in ``cells`` (the notebook as it is) or among
    ``pending_ids`` (cells that staged steps will insert).

    Tried in this order, first hit wins: the exact id; ``#N``; a tag; a unique id prefix."""
    if not isinstance(token, str) or not token.strip():
        raise UsageMistake(
            f"`{token!r}` does not name a cell: give an id, a position like #3, or a tag "
            "(see `%plan cells`)"
        )
    token = token.strip()
    ids = [c.id for c in cells]
    known = set(ids)
    ids += [i for i in pending_ids if i not in known]
    if token in ids:
        return token
    if is_position(token):
        return at_position(token, cells)
    tagged = [c.id for c in cells if token in tags_of(c)]
    if len(tagged) == 1:
        return tagged[0]
    if len(tagged) > 1:
        raise UsageMistake(
            f"the tag `{token}` is on {len(tagged)} cells ({_names(cells, tagged)}); "
            "name one by position (#N) or id"
        )
    prefixed = [i for i in ids if i.startswith(token)] if len(token) >= MIN_PREFIX else []
    if len(prefixed) == 1:
        return prefixed[0]
    if len(prefixed) > 1:
        raise UsageMistake(
            f"`{token}` starts {len(prefixed)} cell ids ({_names(cells, prefixed)}); "
            "give more of the id, or a position (#N)"
        )
    raise UnknownCellName(token)


def _names(cells: Sequence[Cell], ids: Sequence[str], limit: int = 4) -> str:
    named = [describe(cells, i) for i in ids[:limit]]
    more = len(ids) - limit
    return ", ".join(named) + (f" and {more} more" if more > 0 else "")
