"""Whole or nothing for a code step's outputs: what its run made, kept to be put back.

A code step's outputs travel to the live room in the update that records the step done. When
the room is dropped, or the server stops before it saved that update, or another program
writes back a copy of the file read before that save, the step stays done (its code ran: it
must never run again) but the cell comes back without them. So the outputs of each run are
kept here with what the cell showed before them, and whenever the record is read again, a cell
found as it was before the run gets them back (``restore``) if they may have been lost: no save
held them yet, or the room was reloaded since one did, or the server overwrote the room with
the file at the save (``saved_with`` looks once each save is confirmed). A cell changed
otherwise since (its code edited, run again in the page, deleted) is left as it is: the
outputs are moot then.
The last KEEP_AT_MOST code steps' outputs are kept.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from planbook.documents.base import NotebookDocument
from planbook.documents.live.convert import json_ints
from planbook.engine.runner import CellRun
from planbook.errors import PlanbookError
from planbook.model.cell import Cell


@dataclass(frozen=True)
class RunOutputs:
    """What one code step's run put into its cell, and what the cell held before."""

    cell_id: str
    #: the code that ran (outputs belong to it: a cell whose code changed does not get them)
    source: str
    #: the cell's outputs before the run (what a room that missed the write still shows)
    before: list[dict[str, Any]]
    outputs: list[dict[str, Any]]
    execution_count: int | None


def _plain(outputs: list[dict[str, Any]]) -> str:
    """Outputs compared as JSON (a shared document stores integral numbers as floats)."""
    return json.dumps(json_ints(outputs), sort_keys=True)


class KeptOutputs:
    """The outputs of this process's recent code steps, by step id (see the module)."""

    KEEP_AT_MOST = 64

    def __init__(self, document: NotebookDocument) -> None:
        self.document = document
        self._kept: dict[str, RunOutputs] = {}
        #: step id -> the document's reload count when a save last held its outputs
        self._saved_at: dict[str, int] = {}
        #: step id -> the reload count when its outputs were last written into the cell: a
        #: save confirmed after a reload since then saved the reloaded copy, not them
        self._written_at: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._kept)

    def _reloads(self) -> int:
        return int(getattr(self.document, "reloads", 0) or 0)

    def keep(self, step_id: str, cell: Cell, run: CellRun) -> None:
        """Before a step's outputs are written into ``cell`` (as it is before them)."""
        self._kept.pop(step_id, None)
        self._saved_at.pop(step_id, None)
        self._written_at[step_id] = self._reloads()
        self._kept[step_id] = RunOutputs(
            cell.id, cell.source, list(cell.outputs), list(run.outputs), run.execution_count
        )
        for old in list(self._kept)[: -self.KEEP_AT_MOST]:
            self._forget(old)

    def _forget(self, step_id: str) -> None:
        self._kept.pop(step_id, None)
        self._saved_at.pop(step_id, None)
        self._written_at.pop(step_id, None)

    def _state(self, kept: RunOutputs) -> tuple[str, Cell | None]:
        """ "before" (the cell is as it was before the run: its outputs are missing, it is
        returned), "holds" (it has them) or "moot" (changed otherwise, or gone)."""
        found = self.document.find_cell(kept.cell_id)
        if found is None or found.cell.cell_type != "code" or found.cell.source != kept.source:
            return "moot", None
        shown = _plain(found.cell.outputs)
        if shown == _plain(kept.outputs) and found.cell.execution_count == kept.execution_count:
            return "holds", None
        if shown == _plain(kept.before):
            return "before", found.cell
        return "moot", None

    def restore(self, wanted: Callable[[str], bool]) -> list[str]:
        """Write the kept outputs, in one transaction, into each cell that lacks them where
        they may have been lost (never saved, or the room reloaded since), for the steps
        ``wanted`` says (by step id) are settled with their code run; the step ids restored.
        Raises what the document raises (nothing is written then)."""
        reloads = self._reloads()
        todo = []
        for step_id, kept in list(self._kept.items()):
            if self._saved_at.get(step_id) == reloads or not wanted(step_id):
                continue
            state, cell = self._state(kept)
            if state == "moot":
                self._forget(step_id)
            elif cell is not None:
                todo.append((step_id, kept, cell))
        if todo:
            for step_id, _, _ in todo:
                self._written_at[step_id] = reloads
            with self.document.transaction():
                for _, kept, cell in todo:
                    self.document.replace_cell(
                        cell.model_copy(
                            update={
                                "outputs": kept.outputs,
                                "execution_count": kept.execution_count,
                            }
                        )
                    )
        return [step_id for step_id, _, _ in todo]

    def saved_with(self, step_id: str) -> bool:
        """After a confirmed save that followed the commit of ``step_id``'s outputs: whether
        the cell lacks them now (True: put them back, ``restore``). The save's round trip
        brought what the server did until it saved, so the cell is looked at in this copy,
        and nothing goes to the network (a step's end must not fail on a read):

        - it holds them: the file does (they are no longer looked for);
        - it is as before the run: the server overwrote the room at the save. A server killed
          mid-save and started again restores the file's copy from before the save but
          remembers the truncated file's time, so its first save takes the file for changed
          on disk and overwrites the room with it, without the reload planbook is told of;
        - changed otherwise (edited, cleared, run in the page): moot, forgotten.

        If the room was reloaded since the outputs were written, the save wrote the reloaded
        copy (an outside rewrite read before they were saved lacks them) and they stay kept,
        to be put back if the cell is found without them."""
        kept = self._kept.get(step_id)
        if kept is None or self._written_at.get(step_id) != self._reloads():
            return False
        if not hasattr(self.document, "reloads"):  # a file planbook writes itself: it holds them
            self._saved_at[step_id] = 0
            return False
        try:
            state, _ = self._state(kept)
        except PlanbookError:  # unreadable now (a reload under way): looked at again later
            return False
        if state == "holds":
            self._saved_at[step_id] = self._reloads()
        elif state == "moot":
            self._forget(step_id)
        return state == "before"

    def restorable(self) -> bool:
        """Whether some outputs may be missing (cheap: no cell is read)."""
        reloads = self._reloads()
        return any(self._saved_at.get(step_id) != reloads for step_id in self._kept)
