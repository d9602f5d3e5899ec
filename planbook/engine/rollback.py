"""Undo everything after a checkpoint, newest first, as one recorded (and undoable) action."""

from __future__ import annotations

from dataclasses import dataclass

from planbook.engine.checkpoints import CheckpointWriter
from planbook.engine.received import checkpoint_is_local
from planbook.engine.retention import was_pruned
from planbook.engine.store import Store
from planbook.errors import (
    NeedsConfirmation,
    NothingToDo,
    RollbackConflict,
    UnknownCheckpoint,
    UsageMistake,
)
from planbook.model.checkpoint import CellSnapshot, Checkpoint, FileSnapshot
from planbook.model.operations import target_of
from planbook.model.plan import Step


def find_checkpoint(store: Store, ref: str | int | None) -> Checkpoint:
    """``None``: the newest active step checkpoint; else an id, id prefix or 1-based number
    (as ``%checkpoints`` numbers them: ``rollback(2)`` and ``rollback("2")`` are one)."""
    checkpoints = store.state.checkpoints
    if ref is None:
        for cp in reversed(checkpoints):
            if cp.active and cp.kind == "step":
                return cp
        raise NothingToDo("nothing to roll back: no step has run since the last rollback")
    # bool is an int to Python, but rollback(True) meaning "checkpoint 1" would be a trap
    if type(ref) is int:
        ref = str(ref)
    if not isinstance(ref, str):
        raise UsageMistake(
            f"a {type(ref).__name__} does not name a checkpoint: give its number in "
            "`%checkpoints` (e.g. 2) or its id (cp-...)"
        )
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


@dataclass
class RollbackPreview:
    """What a rollback to a checkpoint would do, to show before it is done."""

    #: The checkpoints it undoes, newest first.
    undo: list[Checkpoint]
    #: What it writes, as the person reads it: ``file 'a.py'``, ``cell 'c2'``.
    writes: list[str]
    #: What it refuses to write (a snapshot its step's record does not name), one line each.
    refused: list[str]
    #: The checkpoints among ``undo`` recorded elsewhere (not signed here), one line each.
    received: list[str]

    @property
    def needs_confirmation(self) -> bool:
        return bool(self.received)

    def lines(self) -> list[str]:
        """The preview as the magics and the CLI print it before rolling back."""
        out = [f"rollback writes: {', '.join(self.writes) or 'nothing'}"]
        out += self.received + self.refused
        return out


def preview_rollback(store: Store, target: Checkpoint) -> RollbackPreview:
    undo = to_undo(store, target)
    writes: list[str] = []
    refused: list[str] = []
    received: list[str] = []
    for cp in undo:
        allowed = _allowed(store, cp)
        if not checkpoint_is_local(store.state, cp):
            received.append(
                f"checkpoint {cp.id} was recorded elsewhere or by an older planbook (not "
                "signed here): restoring it needs your confirmation"
            )
        for snap in _snaps(cp):
            key = _key(snap)
            if allowed is not None and key not in allowed:
                refused.append(
                    f"checkpoint {cp.id} carries {key}, which its step did not touch: not restored"
                )
            elif key not in writes:
                writes.append(key)
    return RollbackPreview(undo, writes, refused, received)


def _allowed(store: Store, cp: Checkpoint, depth: int = 0) -> set[str] | None:
    """What ``cp`` may restore: what its step's operation names (a cell, a file); for a
    rollback's record, what the checkpoints it undid may. None: anything it holds (a
    checkpoint signed here, of a step whose operation names no single target, a shell)."""
    if cp.kind == "rollback":
        if checkpoint_is_local(store.state, cp) or depth > 50:
            return None if depth <= 50 else set()
        out: set[str] = set()
        for undone in store.state.checkpoints:
            if undone.id in cp.undid and undone is not cp:
                inner = _allowed(store, undone, depth + 1)
                out |= inner if inner is not None else {_key(s) for s in _snaps(undone)}
        return out
    step = _step_of(store, cp)
    if step is None:
        return set()
    target = target_of(step.operation)
    if target.startswith("cell:"):
        return {f"cell {target.removeprefix('cell:')!r}"}
    if target.startswith("file:"):
        return {f"file {target.removeprefix('file:')!r}"}
    return None if checkpoint_is_local(store.state, cp) else set()


def _step_of(store: Store, cp: Checkpoint) -> Step | None:
    for plan in store.state.plans:
        if plan.id == cp.plan:
            for revision in reversed(plan.revisions):
                for step in revision.steps:
                    if step.id == cp.step:
                        return step
    return None


def _snaps(cp: Checkpoint) -> list[CellSnapshot | FileSnapshot]:
    return [*cp.cells, *cp.files]


def rollback(
    store: Store,
    writer: CheckpointWriter,
    target: Checkpoint,
    *,
    force: bool,
    confirm: bool = False,
) -> Checkpoint:
    preview = preview_rollback(store, target)
    if preview.needs_confirmation and not confirm:
        raise NeedsConfirmation(
            f"checkpoint {target.id} rests on checkpoints recorded elsewhere (not signed "
            f"here); it would write {', '.join(preview.writes) or 'nothing'}: nothing was "
            f"changed; confirm with `%rollback {target.id} --confirm`"
        )
    undo = preview.undo
    refused = set(preview.refused)
    kept: dict[str, list[CellSnapshot | FileSnapshot]] = {}
    for cp in undo:
        allowed = _allowed(store, cp)
        kept[cp.id] = [s for s in _snaps(cp) if allowed is None or _key(s) in allowed]
    newest: dict[str, CellSnapshot | FileSnapshot] = {}
    for cp in undo:
        for snap in kept[cp.id]:
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
        everything += kept[cp.id]
    writer.preload(everything)
    try:
        return _restore(store, writer, target, undo, newest, kept, sorted(refused))
    finally:
        writer.preload([])  # what it read is not kept past the rollback


def _restore(
    store: Store,
    writer: CheckpointWriter,
    target: Checkpoint,
    undo: list[Checkpoint],
    newest: dict[str, CellSnapshot | FileSnapshot],
    kept: dict[str, list[CellSnapshot | FileSnapshot]],
    refused: list[str],
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
            for snap in reversed(kept[cp.id]):
                if isinstance(snap, CellSnapshot):
                    writer.restore_cell(snap)
        for cp in undo:
            for snap in reversed(kept[cp.id]):
                if isinstance(snap, FileSnapshot):
                    writer.restore_file(snap)
        writer.with_after_hashes(record)
        for cp in undo:
            cp.active = False
            cp.undone_by = record.id
            _mark_steps(store, cp, "rolled_back")
            if cp.kind == "rollback":
                _redo(store, cp)
        store.state.checkpoints.append(record)
        store.log("rollback", f"to {target.id}: undid {', '.join(cp.id for cp in undo)}")
        for line in refused:
            store.log("refused", line)
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
