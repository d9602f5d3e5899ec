"""The notebook as planbook sees it: an ordered list of cells with ids, plus metadata.

Three backends implement ``NotebookDocument``: ``MemoryNotebook`` (tests, unreachable
frontends), ``FileNotebook`` (nbformat on disk, atomic save) and ``LiveNotebook`` (the shared
document of a JupyterLab collaboration room). The engine only ever talks to this protocol.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Final, Protocol, runtime_checkable

from planbook.documents.vouched import REPLACED_MIN, Replaced
from planbook.model.cell import Cell, CellOutline

#: A path below ``notebook.metadata[key]``: ("plans", "p-1") names metadata[key]["plans"]["p-1"].
MetadataPath = tuple[str, ...]


class _Delete:
    def __repr__(self) -> str:
        return "DELETE"


#: In ``update_metadata``: remove the entry at this path.
DELETE: Final = _Delete()


@dataclass(frozen=True)
class CellPlace:
    """Where one cell stands: its index, the cell (the caller's own copy) and the id of the
    cell above it (None at the top)."""

    index: int
    cell: Cell
    above: str | None


@runtime_checkable
class NotebookDocument(Protocol):
    """What the engine needs from a notebook. Every mutation happens inside ``transaction()``:
    a backend applies the whole transaction or none of it (the file backend saves once, at the
    end; the live backend sends one CRDT update)."""

    #: "memory", "file" or "live".
    backend: str
    #: One line for the person: where the notebook lives and why this backend was chosen.
    description: str

    def cells(self) -> list[Cell]:
        """The cells in order (fresh: reflects changes made by others since the last call)."""
        ...

    def find_cell(self, cell_id: str) -> CellPlace | None:
        """The cell with ``cell_id`` and its place (inside a transaction: as the transaction
        has it so far), or None when there is none, converting only that cell. The engine
        reads a step's targets this way (drift check, checkpoint, change), a few times per
        step: converting every cell each time made a step's cost grow with the notebook."""
        ...

    def get_metadata(self, key: str) -> Any | None:
        """``notebook.metadata[key]`` (a JSON value), or None."""
        ...

    def set_metadata(self, key: str, value: Any) -> None: ...

    def update_metadata(self, key: str, changes: Mapping[MetadataPath, Any]) -> None:
        """Change some entries below ``notebook.metadata[key]`` and leave the rest as it is.

        Each path names an entry (objects on the way are created when absent); its value
        replaces that entry, or ``DELETE`` removes it. A backend may re-encode or send only
        what changed (the file caches each entry's text, the live room keeps one shared map
        per object), which keeps a step's cost independent of the size of the plan."""
        ...

    def locked(self) -> AbstractContextManager[object]:
        """Hold this notebook exclusively across several transactions (reentrant): other
        threads, and for a file other processes, wait until it is released. Inside, a
        transaction starts from the saved state, so nobody's update is lost."""
        ...

    def insert_cell(self, index: int, cell: Cell) -> None: ...

    def replace_cell(self, cell: Cell) -> None:
        """Replace the cell with ``cell.id`` (type, source, metadata, outputs, count)."""
        ...

    def delete_cell(self, cell_id: str) -> None: ...

    def move_cell(self, cell_id: str, index: int) -> None:
        """Move a cell so that it ends up at ``index`` of the resulting list."""
        ...

    def transaction(self) -> AbstractContextManager[None]:
        """Group changes; on an exception inside, none of them is applied."""
        ...


def outline(document: NotebookDocument) -> list[CellOutline]:
    """Every cell's id, type and source, in order, as ``document.cells()`` has them, without
    a copy of each cell: from the backend's ``outline()`` where it keeps its cells converted
    (file, memory, page, live), else from ``cells()``."""
    read = getattr(document, "outline", None)
    if callable(read):
        found: list[CellOutline] = read()
        return found
    return [CellOutline(c.id, c.cell_type, c.source) for c in document.cells()]


def close_document(document: NotebookDocument) -> None:
    """Release what a backend holds (the live one: a websocket and a thread); others hold none."""
    close = getattr(document, "close", None)
    if callable(close):
        close()


def catch_up(document: NotebookDocument) -> None:
    """Before a change is prepared: let a document that lost its connection get it back, so a
    reload it brings is settled before the record is read (the live room; it raises its
    "unreachable, nothing applied" error when the room stays away). Others have nothing to do."""
    fetch = getattr(document, "catch_up", None)
    if callable(fetch):
        fetch()


def replaced_by_holder(document: NotebookDocument) -> int:
    """How many times whoever holds the notebook replaced the kernel's copy with its own (the
    open page: after refusing a change, or reloaded without saving). After one, a saved record
    older than the one in memory is the truth, not a rewind to undo: what it lacks never
    happened there. The file and the live room are never replaced this way."""
    return int(getattr(document, "replaced", 0))


def coalesced_saves(document: NotebookDocument) -> AbstractContextManager[None]:
    """Inside: a backend that can keeps saves for later. The file keeps each transaction's
    save in memory, the notebook held, until ``write_pending`` or the block's end writes them
    in one durable save; the live room keeps a change of the record alone for the next
    commit's update. Others save as usual."""
    coalesced = getattr(document, "coalesced", None)
    return coalesced() if callable(coalesced) else nullcontext()


def write_pending(document: NotebookDocument) -> None:
    """Write the save ``coalesced_saves`` kept in memory, if any, and release its hold: before
    code runs (its step must be on disk as running), before a file step writes its file (its
    checkpoint first) and where a step or a run ends. It raises what the write raises."""
    write = getattr(document, "write_pending", None)
    if callable(write):
        write()


def save_kept(document: NotebookDocument) -> bool:
    """A save ``coalesced_saves`` kept in memory waits to be written."""
    return bool(getattr(document, "save_kept", False))


def keeps_saves(document: NotebookDocument) -> bool:
    """Saves are kept in memory now (``coalesced_saves``) and written together later:
    what is recorded meanwhile reaches the file with that write, whichever save carries it."""
    return bool(getattr(document, "keeps_saves", False))


def saves_dropped(document: NotebookDocument) -> int:
    """How many kept saves the document dropped unwritten (a write failed, someone else's
    save won): what was news of theirs when this count was lower is not on disk."""
    return int(getattr(document, "saves_dropped", 0))


def make_durable(document: NotebookDocument, *, unless_saved_within: float = 0.0) -> str:
    """Make sure what was committed survives a stop of whoever holds the document (the live
    room: the server saves it now, unless it did less than ``unless_saved_within`` seconds
    ago); "" when it does, else one line saying why not. The file backend saves in every
    transaction, so it has nothing to do."""
    durable = getattr(document, "make_durable", None)
    if not callable(durable):
        return ""
    return str(durable(unless_saved_within=unless_saved_within))


def apply_metadata_changes(root: Any, changes: Mapping[MetadataPath, Any]) -> dict[str, Any]:
    """``update_metadata`` on plain JSON: ``root`` with ``changes`` made, as a new object.

    ``root`` is never changed: each object on a changed path is copied once (shallow), the rest
    is shared, so a backend that caches the encoding of unchanged objects keeps its cache."""
    out: dict[str, Any] = dict(root) if isinstance(root, dict) else {}
    fresh = {id(out)}  # objects copied in this call: changed in place from now on
    for path, value in changes.items():
        if not path:
            raise ValueError("a metadata path names at least one entry")
        node = out
        for part in path[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                if value is DELETE:
                    break
                child = {}
            elif id(child) not in fresh:
                # a long object (the plans) says which entries the copy sets, so the
                # serializer does not compare its 1,000 values to find them (documents/vouched.py)
                child = Replaced.copy_of(child) if len(child) >= REPLACED_MIN else dict(child)
            fresh.add(id(child))
            _put(node, part, child)
            node = child
        else:
            if value is DELETE:
                if type(node) is Replaced:
                    node.drop(path[-1])
                else:
                    node.pop(path[-1], None)
            else:
                _put(node, path[-1], value)
    return out


def _put(node: dict[str, Any], key: str, value: Any) -> None:
    """``node[key] = value``, noted by a node that says which entries were set in it."""
    if type(node) is Replaced:
        node.put(key, value)
    else:
        node[key] = value


def new_cell_id() -> str:
    """A fresh cell id (nbformat 4.5 allows 1-64 letters, digits, - and _)."""
    return uuid.uuid4().hex[:8]


def index_of(cells: list[Cell], cell_id: str) -> int | None:
    for i, cell in enumerate(cells):
        if cell.id == cell_id:
            return i
    return None


def iter_ids(cells: list[Cell]) -> Iterator[str]:
    return (c.id for c in cells)
