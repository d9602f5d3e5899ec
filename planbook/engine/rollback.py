"""Undo everything after a checkpoint, newest first, as one recorded (and undoable) action."""

from __future__ import annotations

from planbook.engine.checkpoints import CheckpointWriter
from planbook.engine.retention import was_pruned
from planbook.engine.store import Store
from planbook.errors import NothingToDo, RollbackConflict, UnknownCheckpoint, UsageMistake
from planbook.model.checkpoint import CellSnapshot, Checkpoint, FileSnapshot


def find_checkpoint(store: Store, ref: str | None) -> Checkpoint:
    """``None``: the newest active step checkpoint; else an id, id prefix or 1-based number."""
    checkpoints = store.state.checkpoints
    if ref is None:
        for cp in reversed(checkpoints):
            if cp.active and cp.kind == "step":
                return cp
        raise NothingToDo("nothing to roll back: no step has run since the last rollback")
    ref = ref.strip()
    if ref.isdigit() and 1 <= int(ref) <= len(checkpoints):
        return checkpoints[int(ref) - 1]
    matches = [
        cp for cp in checkpoints if cp.id == ref or cp.id.startswith(ref) or cp.id == f"cp-{ref}"
    ]
    if len(matches) != 1:
        if not matches and was_pruned(store.state, ref):
            raise UsageMistake(
                f"checkpoint {ref!r} was dropped by `planbook gc` (only the newest are kept); "
                "it cannot be rolled back to any more: pick a newer one from `%checkpoints`"
            )
        raise UnknownCheckpoint(ref)
    return matches[0]


def to_undo(store: Store, target: Checkpoint) -> list[Checkpoint]:
    """The checkpoints a rollback to ``target`` undoes, newest first.

    Earlier rollbacks in the range are left alone: undoing one would redo what it undid, which
    is only wanted when that rollback is itself the target.
    """
    if not target.active:
        raise UsageMistake(
            f"checkpoint {target.id} was already rolled back by {target.undone_by}; "
            f"roll back {target.undone_by} to redo it"
        )
    chosen = [
        cp
        for cp in store.state.checkpoints
        if cp.active and cp.seq >= target.seq and (cp.kind == "step" or cp is target)
    ]
    return sorted(chosen, key=lambda cp: cp.seq, reverse=True)


def rollback(
    store: Store, writer: CheckpointWriter, target: Checkpoint, *, force: bool
) -> Checkpoint:
    undo = to_undo(store, target)
    newest: dict[str, CellSnapshot | FileSnapshot] = {}
    for cp in undo:
        snaps: list[CellSnapshot | FileSnapshot] = [*cp.cells, *cp.files]
        for snap in snaps:
            newest.setdefault(_key(snap), snap)
    if not force:
        changed = [k for k, snap in newest.items() if writer.current_hash(snap) != snap.after_hash]
        if changed:
            raise RollbackConflict(
                f"{', '.join(changed)} changed after the step ran; rolling back would overwrite "
                "that: use `%rollback --force` to do it anyway, or keep the change"
            )
    everything: list[CellSnapshot | FileSnapshot] = []
    for cp in undo:
        everything += [*cp.cells, *cp.files]
    writer.preload(everything)
    try:
        return _restore(store, writer, target, undo, newest)
    finally:
        writer.preload([])  # what it read is not kept past the rollback


def _restore(
    store: Store,
    writer: CheckpointWriter,
    target: Checkpoint,
    undo: list[Checkpoint],
    newest: dict[str, CellSnapshot | FileSnapshot],
) -> Checkpoint:
    seq = max(c.seq for c in store.state.checkpoints) + 1
    record = Checkpoint(
        seq=seq,
        kind="rollback",
        label=f"rollback to {target.id}",
        cells=writer.snapshot_cells(
            [s.cell_id for s in newest.values() if isinstance(s, CellSnapshot)]
        ),
        files=writer.snapshot_paths([s for s in newest.values() if isinstance(s, FileSnapshot)]),
        undid=[cp.id for cp in undo],
    )
    with writer.document.transaction():
        for cp in undo:
            for cell in reversed(cp.cells):
                writer.restore_cell(cell)
        for cp in undo:
            for file in reversed(cp.files):
                writer.restore_file(file)
        writer.with_after_hashes(record)
        for cp in undo:
            cp.active = False
            cp.undone_by = record.id
            _mark_steps(store, cp, "rolled_back")
            if cp.kind == "rollback":
                _redo(store, cp)
        store.state.checkpoints.append(record)
        store.log("rollback", f"to {target.id}: undid {', '.join(cp.id for cp in undo)}")
        store.save()
    return record


def _redo(store: Store, undone_rollback: Checkpoint) -> None:
    for cp in store.state.checkpoints:
        if cp.id in undone_rollback.undid:
            cp.active = True
            cp.undone_by = None
            _mark_steps(store, cp, "done")


def _mark_steps(store: Store, cp: Checkpoint, status: str) -> None:
    if cp.step is None:
        return
    for plan in store.state.plans:
        if plan.id == cp.plan:
            for rev in plan.revisions:
                for step in rev.steps:
                    if step.id == cp.step:
                        step.status = status  # type: ignore[assignment]


def _key(snap: CellSnapshot | FileSnapshot) -> str:
    return f"cell {snap.cell_id!r}" if isinstance(snap, CellSnapshot) else f"file {snap.path!r}"
