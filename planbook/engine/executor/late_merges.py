"""Late merges in a live room: an edit made on a cell's text before a step rewrote it, which
reached the server only after the step was applied, is given back its text, and the step
becomes a conflict (between steps, before code runs, and at the run's end).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from planbook.documents.base import NotebookDocument
from planbook.engine.executor.record import StepRecords
from planbook.engine.executor.report import RunReport, StepOutcome, one_line
from planbook.errors import PlanbookError
from planbook.model.operations import EditCell

if TYPE_CHECKING:
    from planbook.documents.live.merges import LateMerge


class LateMerges(StepRecords):
    def _late_conflicts(
        self, plan_id: str, report: RunReport, current: str | None = None, *, sync: bool = True
    ) -> list[StepOutcome]:
        """Between steps, before code runs and at the run's end: a step done whose text
        rewrite met a late edit (see ``_put_back_late``) becomes a conflict in the report
        too (the run stops there); the outcomes, the ``current`` step's left to the caller."""
        try:
            outcomes = self._put_back_late(plan_id, sync=sync)
        except PlanbookError as exc:  # the room went away, or the cell changed again
            report.notes.append(
                f"could not look for a late edit of a step's cell ({one_line(exc)}); "
                "look at the cells the run changed"
            )
            return []
        for outcome in outcomes:
            at = [i for i, o in enumerate(report.outcomes) if o.step_id == outcome.step_id]
            if at:
                report.outcomes[at[-1]] = outcome
            elif outcome.step_id != current:  # a step of an earlier run
                report.notes.append(f"step {outcome.number}: conflict: {outcome.message}")
        return outcomes

    def _put_back_late(self, plan_id: str, *, sync: bool = True) -> list[StepOutcome]:
        """An edit made on the text a step rewrote, before the step reached it, that reached
        the server only after the step looked for a merge (a network's delay): the cell gets
        their text back and the step becomes a conflict, in one transaction (one room update),
        with the one line that says so. The step is the plan's last one done (or running)
        that rewrote that cell's text: a later rewrite ends the watch of an earlier one."""
        merges = _late_merges(self.document, sync=sync)
        if not merges:
            return []
        outcomes = []
        with self._saved_state(), self.document.transaction():
            plan = self.store.plan_by_id(plan_id)
            for merge in merges:
                step = next(
                    (
                        s
                        for s in reversed(plan.steps)
                        if isinstance(s.operation, EditCell)
                        and s.operation.cell_id == merge.cell_id
                        and s.status in ("done", "running")
                    ),
                    None,
                )
                found = self.document.find_cell(merge.cell_id)
                if step is None or found is None:
                    continue
                self.document.replace_cell(found.cell.model_copy(update={"source": merge.text}))
                saved = self.store.state.checkpoints
                cp = next((c for c in saved if c.id == step.checkpoint), None)
                if cp is not None:  # the step's change is gone: nothing of it to roll back
                    self.store.state.checkpoints.remove(cp)
                step.checkpoint = None
                outcomes.append(
                    self._record(plan, step, "conflict", merge.message(), time.monotonic())
                )
        return [self._announce(plan_id, outcome, None) for outcome in outcomes]


def _late_merges(document: NotebookDocument, *, sync: bool) -> list[LateMerge]:
    """The live room's late merges (``LiveNotebook.late_merges``); none elsewhere."""
    found = getattr(document, "late_merges", None)
    return list(found(sync=sync)) if callable(found) else []
