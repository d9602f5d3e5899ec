"""Start a notebook over: undo every step whose change is still in place (one rollback to the
oldest such checkpoint, with the same drift check) and forget planbook's record of it, so a
tutorial or a rehearsed demo runs again from the same page."""

from __future__ import annotations

from planbook.engine.checkpoints import CheckpointWriter
from planbook.engine.rollback import rollback
from planbook.engine.store import METADATA_KEY, Store
from planbook.engine.stored_record import empty_state
from planbook.errors import RollbackConflict


def start_over(store: Store, writer: CheckpointWriter, *, force: bool) -> int:
    """Undo the steps still in effect and clear the record (plans, checkpoints, conversation,
    mode back to plan); the number of steps undone. A target changed after its step ran
    refuses it all (``RollbackConflict``) unless ``force``: nothing is changed then."""
    in_effect = [cp for cp in store.state.checkpoints if cp.active and cp.kind == "step"]
    undone = 0
    if in_effect:
        oldest = min(in_effect, key=lambda cp: cp.seq)
        try:
            undone = len(rollback(store, writer, oldest, force=force).undid)
        except RollbackConflict as exc:
            said = str(exc).split("; rolling back", 1)[0]
            raise RollbackConflict(
                f"{said}; starting over would overwrite that: use `%plan reset --force` to do "
                "it anyway, or keep the change (nothing was changed)"
            ) from None
    store.state = empty_state()
    # Written whole, not by difference: the emptied buckets go too, as in a notebook never used.
    store.document.set_metadata(METADATA_KEY, store.layout())
    store.load()
    return undone
