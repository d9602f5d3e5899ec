"""Reading planbook's stored record: the schema-2 layout (plans, checkpoints and log entries by
id, in buckets of 64) back into the shape of PlanbookState, validated, with what a save leaves
out (a checkpoint's id, plan and default label) derived again.

A record that is corrupted, written by a newer planbook, nested deeper than ``RECORD_DEPTH`` or
naming one id twice is refused with one line, and nothing is saved over it; the agent's
conversation alone is set aside when too deep (plans keep working). engine/store.py writes the
layout and keeps the state in step with the notebook.
"""

from __future__ import annotations

from typing import Any

from planbook.documents.deep_json import nested_deeper
from planbook.errors import MetadataError, invalid_as
from planbook.model.conversation import Conversation
from planbook.model.store import SCHEMA_VERSION, PlanbookState

#: Fields stored by part; every other field of PlanbookState is one entry of its own.
BY_PART = frozenset({"plans", "checkpoints", "blobs", "log"})


BUCKET = 64
#: The most levels of containers one part of the record (a field, a plan, a checkpoint...)
#: may nest; planbook's own parts stay under 20, a tool call's arguments included.
RECORD_DEPTH = 64
#: Fields that a load sets aside when they are too deep, instead of refusing the record.
_SET_ASIDE = frozenset({"conversation"})


def log_key(number: int) -> str:
    """The key of the ``number``-th log entry (1-based): sorts in order as text."""
    return f"{number:06d}"


def bucket(number: int) -> str:
    """The bucket of the ``number``-th (1-based) checkpoint or log entry."""
    return f"{(max(number, 1) - 1) // BUCKET:04d}"


def flat_buckets(buckets: Any) -> dict[str, Any] | None:
    """The entries of a bucketed map, or None when it is not one."""
    if not isinstance(buckets, dict) or not all(isinstance(b, dict) for b in buckets.values()):
        return None
    return {k: v for b in buckets.values() for k, v in b.items()}


def from_layout(raw: dict[str, Any]) -> dict[str, Any]:
    """A schema-2 metadata value in the shape of PlanbookState (lists where the model has
    lists); schema 1 is that shape already."""
    if raw.get("schema_version") != 2:
        return raw
    out = {k: v for k, v in raw.items() if k not in BY_PART and k != "plan_order"}
    plans = raw.get("plans", {})
    checkpoints = flat_buckets(raw.get("checkpoints", {}))
    log = flat_buckets(raw.get("log", {}))
    if not isinstance(plans, dict) or checkpoints is None or log is None:
        # refused by validation, which names the place
        out.update(plans=plans, checkpoints=raw.get("checkpoints"), log=raw.get("log"))
        return out
    order = raw.get("plan_order")
    if isinstance(order, list) and sorted(map(str, order)) == sorted(plans):
        out["plans"] = [plans[str(i)] for i in order]
    else:
        out["plans"] = list(plans.values())
    out["checkpoints"] = sorted(
        _with_derived(checkpoints, plans),
        key=lambda c: c.get("seq", 0) if isinstance(c, dict) else 0,
    )
    out["log"] = [log[k] for k in sorted(log)]
    out["blobs"] = raw.get("blobs", {})
    return out


def _with_derived(checkpoints: dict[str, Any], plans: dict[str, Any]) -> list[Any]:
    """The stored checkpoints with what a save leaves out because it is stored elsewhere (see
    ``dump_checkpoint``): the id (the entry's key), the plan (the one holding the step) and
    the default label (the step's number and kind)."""
    steps: dict[str, tuple[str, int, str]] | None = None
    out = []
    for key, cp in checkpoints.items():
        if not isinstance(cp, dict) or ("id" in cp and "plan" in cp and "label" in cp):
            out.append(cp)
            continue
        cp = {"id": key, **cp}
        if isinstance(cp.get("step"), str) and ("plan" not in cp or "label" not in cp):
            if steps is None:
                steps = _steps_by_id(plans)
            found = steps.get(cp["step"])
            if found is not None:
                cp.setdefault("plan", found[0])
                cp.setdefault("label", default_label(found[1], found[2]))
        out.append(cp)
    return out


def _steps_by_id(plans: dict[str, Any]) -> dict[str, tuple[str, int, str]]:
    """step id -> (plan id, its number, its kind), from the newest revision that holds it."""
    out: dict[str, tuple[str, int, str]] = {}
    for plan_id, plan in plans.items():
        revisions = plan.get("revisions") if isinstance(plan, dict) else None
        for revision in reversed(revisions if isinstance(revisions, list) else []):
            steps = revision.get("steps") if isinstance(revision, dict) else None
            for number, step in enumerate(steps if isinstance(steps, list) else [], start=1):
                if isinstance(step, dict) and isinstance(step.get("id"), str):
                    op = step.get("operation")
                    kind = op.get("kind") if isinstance(op, dict) else None
                    out.setdefault(step["id"], (str(plan_id), number, str(kind)))
    return out


#: What a checkpoint's label adds for steps whose effect no checkpoint holds.
UNDONE_NOTES = {
    "shell": ": shell commands are not undone by rollback",
    "mcp_call": ": MCP calls are not undone by rollback",
}


def default_label(number: int, kind: str) -> str:
    """The label the executor gives the checkpoint it writes before step ``number``."""
    label = f"before step {number} ({kind})"
    return label + UNDONE_NOTES.get(kind, "")


def empty_state() -> PlanbookState:
    """The state of a notebook without planbook metadata, made without pydantic's validator
    (the defaults need none): opening a session on such a notebook builds no validator."""
    return PlanbookState.model_construct()


def parse_state(raw: Any, where: str = "this notebook") -> PlanbookState:
    if raw is None:
        return empty_state()
    if not isinstance(raw, dict):
        raise MetadataError(
            f"planbook metadata in {where} is a {type(raw).__name__}, not an object; it was left "
            "untouched: remove notebook.metadata['planbook'] to start afresh"
        )
    version = raw.get("schema_version")
    if isinstance(version, int) and version > SCHEMA_VERSION:
        raise MetadataError(
            f"planbook metadata in {where} has schema {version}, newer than this planbook "
            f"understands ({SCHEMA_VERSION}); it was left untouched: upgrade planbook to use it"
        )

    def corrupted(at: str, problem: str) -> MetadataError:
        return MetadataError(
            f"planbook metadata in {where} is corrupted at {at}: {problem}; it was left "
            "untouched: repair it or remove notebook.metadata['planbook'] to start afresh"
        )

    set_aside: dict[str, tuple[Any, str]] = {}
    for name, value in raw.items():
        if not nested_deeper(value, RECORD_DEPTH):
            continue
        at = _deep_entry(name, value)
        if name not in _SET_ASIDE:
            raise corrupted(at, f"nested deeper than {RECORD_DEPTH} levels")
        set_aside[name] = (
            value,
            f"planbook metadata in {where} is corrupted at {at}: nested deeper than "
            f"{RECORD_DEPTH} levels; it was set aside untouched (plans keep working): remove "
            f"notebook.metadata['planbook']['{name}'] to start it afresh",
        )
    if set_aside:
        raw = {k: v for k, v in raw.items() if k not in set_aside}
    with invalid_as(corrupted, whole="(top level)"):
        state = PlanbookState.model_validate(from_layout(raw))
    state._set_aside = set_aside
    clash = duplicate_id(state)
    if clash is not None:
        raise corrupted(*clash)
    state.schema_version = SCHEMA_VERSION
    # in seq order, as they are appended (schema 2 is read that way; schema 1 as written)
    state.checkpoints.sort(key=lambda c: c.seq)
    return state


def _deep_entry(name: str, value: Any) -> str:
    """Where in field ``name`` the record is too deep: the entry (a plan, a checkpoint's
    bucket) for a field kept by part, else the field."""
    if name in BY_PART and isinstance(value, dict):
        for key, entry in value.items():
            if nested_deeper(entry, RECORD_DEPTH - 1):
                return f"{name}/{key}"
    return name


def conversation_of(state: PlanbookState) -> Conversation | None:
    """The agent's conversation, or its one-line refusal when the load set it aside."""
    kept = state._set_aside.get("conversation")
    if kept is not None:
        raise MetadataError(kept[1])
    return state.conversation


def duplicate_id(state: PlanbookState) -> tuple[str, str] | None:
    """(where, what) of the first step id that names two records: two steps of one revision,
    steps of two plans, or a step and a plan or checkpoint. An approval names steps by id, so
    such a plan would approve both and run one: it is refused as corrupted instead."""
    owners: dict[str, str] = {p.id: f"plan {p.id}" for p in state.plans}
    owners.update((c.id, f"checkpoint {c.id}") for c in state.checkpoints)
    for plan in state.plans:
        in_plan: set[str] = set()
        for revision in plan.revisions:
            seen: set[str] = set()
            for step in revision.steps:
                if step.id in seen:
                    where = f"plans/{plan.id}/revision {revision.number}"
                    return where, f"step id {step.id!r} is used by two steps"
                seen.add(step.id)
                other = owners.get(step.id)
                if other is not None:
                    return f"plans/{plan.id}", f"step id {step.id!r} is also the id of {other}"
            in_plan |= seen
        owners.update((step_id, f"a step of plan {plan.id}") for step_id in in_plan)
    return None
