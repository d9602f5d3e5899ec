"""What a notebook carries from elsewhere is data, never authority.

The records that let something run, apply or restore (approvals, the mode, checkpoints; the
agent's recorded answers in agent/memory.py) are signed when made here (engine/signing.py).
This module says what each record's signed content is, signs them, and settles a loaded
state: an approval made elsewhere sends its steps back to pending ("approved elsewhere by X"),
and a mode chosen elsewhere is not adopted (the notebook opens in plan mode). Nothing here
writes: the settled state is saved with the next change, like any other.

Every signature also names the notebook it was made in (``PlanbookState.notebook``, an id
whose own signature binds it to the file's absolute path), so a signed record copied from one
of this person's notebooks into another is foreign there. A notebook copied or moved keeps
its records but they are foreign at the new place, as in a received notebook, until the
person says the notebook is theirs (``rebind``, what ``planbook trust NOTEBOOK`` calls).
"""

from __future__ import annotations

from typing import Any

from planbook.engine import signing
from planbook.model.checkpoint import Checkpoint
from planbook.model.plan import Approval, Plan, new_id
from planbook.model.store import NotebookIdentity, PlanbookState
from planbook.model.words import count


def _identity_holds(identity: NotebookIdentity, place: str) -> bool:
    return signing.verify("notebook", [identity.id, place], identity.signature)


def bind(state: PlanbookState, place: str) -> str | None:
    """Settle which notebook ``state`` (just loaded) is: opened at ``place`` (its absolute
    path, "" without a file). Records verify only when its identity was signed here for this
    place. Returns one line when the identity was signed by this person for another place
    (the notebook was copied or moved, or records were copied out of one), else None."""
    state._place = place
    identity = state.notebook
    if identity is not None and identity.place == place and _identity_holds(identity, place):
        state._bound = identity.id
        return None
    state._bound = None
    if identity is None or not _identity_holds(identity, identity.place):
        return None
    name = _plain_path(place.rsplit("/", 1)[-1]) if place else "NOTEBOOK"
    return (
        f"this notebook's records were signed at {_plain_path(identity.place)}, not here "
        "(copied or moved): its approvals, mode, answers and checkpoints count as received; "
        f"if you moved it yourself: `%plan trust` or `planbook trust {name}`"
    )


def rebind(state: PlanbookState, place: str) -> bool:
    """The person says the notebook at ``place`` is theirs, moved: its identity, when this
    person signed it for another place, is signed for ``place`` (its records verify again).
    False when there is nothing of this person's to carry over."""
    identity = state.notebook
    if identity is None or not _identity_holds(identity, identity.place):
        return False
    state.notebook = _identity(identity.id, place)
    state._place = place
    state._bound = identity.id
    return True


def _identity(identity_id: str, place: str) -> NotebookIdentity:
    signature = signing.sign("notebook", [identity_id, place])
    return NotebookIdentity(id=identity_id, place=place, signature=signature)


def _signing_id(state: PlanbookState) -> str:
    """The id this person's new signatures name; a notebook without an identity valid here
    gets a new one (so what it carries from elsewhere stays foreign)."""
    if state._bound is None:
        state.notebook = _identity(new_id() + new_id(), state._place)
        state._bound = state.notebook.id
    return state._bound


def sign_record(state: PlanbookState, kind: str, content: Any) -> str:
    """This person's signature over a record of ``kind`` in the notebook ``state`` holds."""
    return signing.sign(kind, [_signing_id(state), content])


def record_is_local(state: PlanbookState, kind: str, content: Any, signature: str | None) -> bool:
    """Whether this person signed exactly this record, in this notebook, at this place."""
    bound = state._bound
    return bound is not None and signing.verify(kind, [bound, content], signature)


#: The parts of a checkpoint a rollback acts on (which, where and what it restores); its
#: label, time, after-hashes and whether it was undone are bookkeeping a rollback changes.
_CHECKPOINT_BOOKKEEPING = {"signature", "label", "at", "active", "undone_by"}


def _approval_content(plan_id: str, approval: Approval) -> dict[str, Any]:
    return {"plan": plan_id, **approval.model_dump(mode="json", exclude={"signature"})}


def signed_approval(state: PlanbookState, plan_id: str, approval: Approval) -> Approval:
    """``approval`` with who approved (user@host) and this person's signature."""
    named = approval.model_copy(update={"person": approval.person or signing.who()})
    signature = sign_record(state, "approval", _approval_content(plan_id, named))
    return named.model_copy(update={"signature": signature})


def approval_is_local(state: PlanbookState, plan_id: str, approval: Approval) -> bool:
    content = _approval_content(plan_id, approval)
    return record_is_local(state, "approval", content, approval.signature)


def _checkpoint_content(cp: Checkpoint) -> dict[str, Any]:
    dumped = cp.model_dump(mode="json", exclude=_CHECKPOINT_BOOKKEEPING)
    for kind in ("cells", "files"):
        for snap in dumped.get(kind, []):
            snap.pop("after_hash", None)
    return dumped


def sign_checkpoint(state: PlanbookState, cp: Checkpoint) -> None:
    """Sign a checkpoint made here (only when its content changed since it was signed)."""
    signature = sign_record(state, "checkpoint", _checkpoint_content(cp))
    if cp.signature != signature:
        cp.signature = signature


def checkpoint_is_local(state: PlanbookState, cp: Checkpoint) -> bool:
    return record_is_local(state, "checkpoint", _checkpoint_content(cp), cp.signature)


def sign_mode(state: PlanbookState) -> None:
    state.mode_signature = None if state.mode == "plan" else sign_record(state, "mode", state.mode)


def mode_is_local(state: PlanbookState) -> bool:
    """Plan mode needs no signature: it lets nothing run or apply by itself."""
    return state.mode == "plan" or record_is_local(state, "mode", state.mode, state.mode_signature)


def approved_elsewhere(state: PlanbookState, plan: Plan) -> dict[str, str]:
    """Step id -> who approved it elsewhere ("bob@laptop"), for the steps of ``plan`` that an
    approval not signed here names and no approval signed here does."""
    foreign: dict[str, str] = {}
    local: set[str] = set()
    for approval in plan.approvals:
        if approval_is_local(state, plan.id, approval):
            local.update(approval.step_ids)
        else:
            who = _plain(approval.person or approval.by) or "someone"
            for step_id in approval.step_ids:
                foreign[step_id] = who
    return {k: v for k, v in foreign.items() if k not in local}


def _plain_path(path: str) -> str:
    """A path from the record as shown: ``_plain`` plus ``/`` and ``~``."""
    return "".join(c for c in path if c.isalnum() or c in "@._-()/~ ")[:200].strip() or "?"


def _plain(name: str) -> str:
    """A name from elsewhere as shown: letters, digits and ``@._-()`` and spaces only, so it
    is no markup or terminal control in any surface; at most 80 characters."""
    return "".join(c for c in name if c.isalnum() or c in "@._-() ")[:80].strip()


def locally_approved(state: PlanbookState, plan: Plan) -> set[str]:
    """Ids of the steps that an approval signed here names."""
    out: set[str] = set()
    for approval in plan.approvals:
        if approval_is_local(state, plan.id, approval):
            out.update(approval.step_ids)
    return out


def settle_received(state: PlanbookState, place: str) -> list[str]:
    """Bind ``state`` to the notebook at ``place`` (``bind``) and take the authority out of
    what it carries from elsewhere; one line each of what was found, to show the person.
    Approved steps whose approval was not signed here go back to pending; a mode chosen
    elsewhere becomes plan mode."""
    moved = bind(state, place)
    notes: list[str] = [moved] if moved else []
    for plan in state.plans:
        waiting = [s for s in plan.steps if s.status == "approved"]
        if not waiting:
            continue
        local = locally_approved(state, plan)
        foreign = [s for s in waiting if s.id not in local]
        if not foreign:
            continue
        elsewhere = approved_elsewhere(state, plan)
        for step in foreign:
            step.status = "pending"
            step.run_by = None
        if plan.state == "executing" and not any(
            s.status in ("approved", "running") for s in plan.steps
        ):
            plan.state = "awaiting_approval"
        whom = sorted({elsewhere.get(s.id, "someone") for s in foreign})
        notes.append(
            f"plan {plan.id}: {count(foreign, 'step')} approved elsewhere (by {', '.join(whom)}) "
            "went back to pending: review them with `%plan` and approve them here"
        )
    if not mode_is_local(state):
        by = _plain(next((e.by for e in reversed(state.log) if e.event == "mode"), ""))
        notes.append(
            f"this notebook was saved in {state.mode} mode elsewhere"
            + (f" (by {by})" if by else "")
            + f": it opens in plan mode here; `%plan {state.mode}` to switch"
        )
        state.mode = "plan"
        state.mode_signature = None
    return notes
