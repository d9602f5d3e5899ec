"""Reconcile the plan record with the notebook after the document was reloaded underneath.

A live room can be replaced by what the server holds: the server restarted and rebuilt it from
the file, the file changed on disk and the server reloaded it, or an update's fate was unknown
and the copy was fetched again. After that the record kept in memory and the cells may disagree:
a step recorded done whose change the reload undid, or a step whose change reached the room
although its confirmation was lost. This module settles both, from the cells (the effect is the
truth) and the richer of the two records (an approval is never dropped because the room's copy
of the record is older), and says in one line what it found.
"""

from __future__ import annotations

from planbook.documents.base import NotebookDocument
from planbook.engine.checkpoints import cell_state_hash
from planbook.engine.hashing import cell_hash
from planbook.engine.store import Store, older_copy
from planbook.errors import MetadataError
from planbook.model.cell import Cell
from planbook.model.checkpoint import Checkpoint
from planbook.model.operations import DeleteCell, EditCell, InsertCell, MoveCell, RunCell
from planbook.model.plan import Plan, Step, StepResult
from planbook.model.words import plural

_CELL_OPS = (InsertCell, EditCell, DeleteCell, MoveCell, RunCell)


class ReloadWatch:
    """Notices when a document was reloaded (only the live backend ever is), or its saved
    record was found put back to an older copy (``Store.rewinds``)."""

    def __init__(self, document: NotebookDocument, store: Store | None = None) -> None:
        self.document = document
        self.store = store
        self.seen = self.count()
        self._seen_reloads = self._reloads()

    def _reloads(self) -> int:
        return int(getattr(self.document, "reloads", 0) or 0)

    def count(self) -> int:
        return self._reloads() + (self.store.rewinds if self.store is not None else 0)

    def reloaded(self) -> bool:
        return self.count() != self.seen

    @property
    def reason(self) -> str:
        why = str(getattr(self.document, "reload_reason", "") or "")
        if self._reloads() == self._seen_reloads and self.reloaded():  # a rewind alone
            return "the plan record was put back to an older copy (the server reloaded the file)"
        return why or "the notebook was reloaded"

    def acknowledge(self) -> None:
        self.seen = self.count()
        self._seen_reloads = self._reloads()


def choose_record(store: Store) -> str:
    """Make ``store.state`` the richer of the room's record and memory's; what was chosen.
    Either way the store learns what the room holds now, so its next save writes everything
    the room lacks (a by-part save compares with what it believes is saved)."""
    memory = store.state
    try:
        store.load()
    except MetadataError:
        store.state = memory
        return "memory (the room's record is unreadable)"
    if older_copy(store.state, memory):
        store.state = memory
        return "memory"
    return "room"


def _present(step: Step, checkpoint: Checkpoint | None, cells: list[Cell]) -> bool | None:
    """Whether the step's change is in ``cells``: True, False, or None when the cells cannot
    tell (a move or a run changes no content; someone edited the target since)."""
    op = step.operation
    if not isinstance(op, _CELL_OPS):
        return None
    after: str | None = None
    if checkpoint is not None:
        after = next((s.after_hash for s in checkpoint.cells if s.cell_id == op.cell_id), None)
    elif isinstance(op, InsertCell):
        after = cell_hash(op.cell_type, op.source)
    if not after or after == step.base:
        return None
    now = cell_state_hash(cells, op.cell_id)
    if now == after:
        return True
    if now == step.base:
        return False
    return None


def reconcile(store: Store, document: NotebookDocument, reason: str) -> list[str]:
    """Settle every step with what the cells say, after ``reason`` (a reload); one line per
    plan that changed, or one saying they agree. Call under the session lock, then save the
    store."""
    cells = document.cells()
    checkpoints = {c.id: c for c in store.state.checkpoints}
    notes = []
    for plan in store.state.plans:
        undone, applied = _settle(plan, checkpoints, cells, reason, store)
        if not undone and not applied:
            continue
        if undone and plan.state == "completed":
            plan.fire("reopen")
        parts = []
        if undone:
            parts.append(
                f"{plural('step', len(undone))} {_numbers(undone)} recorded done "
                f"{plural('was', len(undone))} undone by it and {plural('is', len(undone))} "
                "pending again (approve again)"
            )
        if applied:
            parts.append(
                f"{plural('step', len(applied))} {_numbers(applied)} had reached the notebook "
                f"and {plural('is', len(applied))} now recorded done"
            )
        notes.append(f"plan {plan.id}: {reason}; " + "; ".join(parts))
    if notes:
        store.log("reconciled", " | ".join(notes))
    elif store.state.plans:  # what it found is worth a line too: nothing to settle
        notes.append(f"{reason}; the plan was checked against the notebook: they agree")
    return notes


def _settle(
    plan: Plan,
    checkpoints: dict[str, Checkpoint],
    cells: list[Cell],
    reason: str,
    store: Store,
) -> tuple[list[int], list[int]]:
    undone: list[int] = []
    applied: list[int] = []
    gone_targets: set[str] = set()
    gone_steps: set[str] = set()
    for number, step in enumerate(plan.steps, 1):
        op = step.operation
        if not isinstance(op, _CELL_OPS):
            continue
        checkpoint = checkpoints.get(step.checkpoint or "")
        present = _present(step, checkpoint, cells)
        if step.status == "done":
            # a later change of a target whose earlier change is gone is gone with it
            follows_gone = op.cell_id in gone_targets or bool(set(step.depends_on) & gone_steps)
            if present is False or (present is None and follows_gone and not _exists(op, cells)):
                _undo(plan, step, checkpoint, store, reason)
                undone.append(number)
                gone_targets.add(op.cell_id)
                gone_steps.add(step.id)
        elif step.status == "pending" and checkpoint is not None and present is False:
            # left pending by an unreachable room, and its change never landed: the
            # checkpoint of a change that did not happen goes
            store.state.checkpoints.remove(checkpoint)
            step.checkpoint = None
        elif step.status in ("running", "failed", "pending", "approved") and present is True:
            if step.runs_cell:
                continue  # its code may not have run: recover() or the executor's resume decide
            if checkpoint is None and not isinstance(op, InsertCell):
                continue  # nothing to roll back to: leave it for the drift check
            step.status = "done"
            step.error = None
            plan.results.append(
                StepResult(
                    step_id=step.id,
                    status="done",
                    message=f"its change was found in the notebook after {reason}",
                    checkpoint=step.checkpoint,
                )
            )
            applied.append(number)
    return undone, applied


def _exists(op: InsertCell | EditCell | DeleteCell | MoveCell | RunCell, cells: list[Cell]) -> bool:
    return any(c.id == op.cell_id for c in cells) != isinstance(op, DeleteCell)


def _undo(plan: Plan, step: Step, checkpoint: Checkpoint | None, store: Store, reason: str) -> None:
    if checkpoint is not None and checkpoint in store.state.checkpoints:
        store.state.checkpoints.remove(checkpoint)  # there is nothing of it left to roll back
    step.checkpoint = None
    step.status = "pending"
    step.error = f"undone: {reason}; approve it again to re-apply it"
    plan.results.append(StepResult(step_id=step.id, status="rolled_back", message=step.error))


def _numbers(numbers: list[int]) -> str:
    return ", ".join(str(n) for n in numbers)
