"""What a notebook carries from elsewhere is data, never authority.

The records that let something run, apply or restore (approvals, the mode, checkpoints; the
agent's recorded answers in agent/memory.py) are signed when made here (engine/signing.py).
This module says what each record's signed content is, signs them, and settles a loaded
state: an approval made elsewhere sends its steps back to pending ("approved elsewhere by X"),
and a mode chosen elsewhere is not adopted (the notebook opens in plan mode). Nothing here
writes: the settled state is saved with the next change, like any other.
"""

from __future__ import annotations

from typing import Any

from planbook.engine import signing
from planbook.model.checkpoint import Checkpoint
from planbook.model.plan import Approval, Plan
from planbook.model.store import PlanbookState
from planbook.model.words import count

#: The parts of a checkpoint a rollback acts on (which, where and what it restores); its
#: label, time, after-hashes and whether it was undone are bookkeeping a rollback changes.
_CHECKPOINT_BOOKKEEPING = {"signature", "label", "at", "active", "undone_by"}


def _approval_content(plan_id: str, approval: Approval) -> dict[str, Any]:
    return {"plan": plan_id, **approval.model_dump(mode="json", exclude={"signature"})}


def signed_approval(plan_id: str, approval: Approval) -> Approval:
    """``approval`` with who approved (user@host) and this person's signature."""
    named = approval.model_copy(update={"person": approval.person or signing.who()})
    signature = signing.sign("approval", _approval_content(plan_id, named))
    return named.model_copy(update={"signature": signature})


def approval_is_local(plan_id: str, approval: Approval) -> bool:
    return signing.verify("approval", _approval_content(plan_id, approval), approval.signature)


def _checkpoint_content(cp: Checkpoint) -> dict[str, Any]:
    dumped = cp.model_dump(mode="json", exclude=_CHECKPOINT_BOOKKEEPING)
    for kind in ("cells", "files"):
        for snap in dumped.get(kind, []):
            snap.pop("after_hash", None)
    return dumped


def sign_checkpoint(cp: Checkpoint) -> None:
    """Sign a checkpoint made here (only when its content changed since it was signed)."""
    signature = signing.sign("checkpoint", _checkpoint_content(cp))
    if cp.signature != signature:
        cp.signature = signature


def checkpoint_is_local(cp: Checkpoint) -> bool:
    return signing.verify("checkpoint", _checkpoint_content(cp), cp.signature)


def sign_mode(state: PlanbookState) -> None:
    state.mode_signature = None if state.mode == "plan" else signing.sign("mode", state.mode)


def mode_is_local(state: PlanbookState) -> bool:
    """Plan mode needs no signature: it lets nothing run or apply by itself."""
    return state.mode == "plan" or signing.verify("mode", state.mode, state.mode_signature)


def approved_elsewhere(plan: Plan) -> dict[str, str]:
    """Step id -> who approved it elsewhere ("bob@laptop"), for the steps of ``plan`` that an
    approval not signed here names and no approval signed here does."""
    foreign: dict[str, str] = {}
    local: set[str] = set()
    for approval in plan.approvals:
        if approval_is_local(plan.id, approval):
            local.update(approval.step_ids)
        else:
            who = _plain(approval.person or approval.by) or "someone"
            for step_id in approval.step_ids:
                foreign[step_id] = who
    return {k: v for k, v in foreign.items() if k not in local}


def _plain(name: str) -> str:
    """A name from elsewhere as shown: letters, digits and ``@._-()`` and spaces only, so it
    is no markup or terminal control in any surface; at most 80 characters."""
    return "".join(c for c in name if c.isalnum() or c in "@._-() ")[:80].strip()


def locally_approved(plan: Plan) -> set[str]:
    """Ids of the steps that an approval signed here names."""
    out: set[str] = set()
    for approval in plan.approvals:
        if approval_is_local(plan.id, approval):
            out.update(approval.step_ids)
    return out


def settle_received(state: PlanbookState) -> list[str]:
    """Take the authority out of what ``state`` carries from elsewhere; one line each of what
    was found, to show the person. Approved steps whose approval was not signed here go back
    to pending; a mode chosen elsewhere becomes plan mode."""
    notes: list[str] = []
    for plan in state.plans:
        waiting = [s for s in plan.steps if s.status == "approved"]
        if not waiting:
            continue
        local = locally_approved(plan)
        foreign = [s for s in waiting if s.id not in local]
        if not foreign:
            continue
        elsewhere = approved_elsewhere(plan)
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
