"""The panel's whole state as one JSON value (the widget's synced ``view`` trait).

No business logic, just data shaping: the plan, its steps with structured diffs, checkpoints,
revisions, the running progress and the last error. The front end renders it as it is.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from planbook.model.cell import SHORT_ID, WHOLE_ID, short_ids
from planbook.model.checkpoint import Checkpoint
from planbook.model.plan import Plan, Revision, Step
from planbook.present.diff import diff_texts
from planbook.present.safe import visible
from planbook.present.text import shell_preview_text
from planbook.present.views import MCP_NOTE, StepView

#: Kinds whose before/after texts are the same: the panel shows the cell, not a diff.
SHOW_AS_CELL = frozenset({"insert_cell", "run_cell", "move_cell", "shell"})
#: Counts the header always shows, even at zero.
HEADER_COUNTS = ("pending", "approved", "done", "failed")


@dataclass
class Progress:
    """A run in progress, as the panel tells it."""

    running: bool = False
    step_ids: list[str] = field(default_factory=list)
    current: str | None = None
    finished: list[str] = field(default_factory=list)
    stopping: bool = False
    message: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "running": self.running,
            "total": len(self.step_ids),
            "done": len(self.finished),
            "current": self.current,
            "stopping": self.stopping,
            "message": self.message,
        }


def first_line(source: str, limit: int = 60) -> str:
    line = next((ln.strip() for ln in source.splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def cell_names(ids: Sequence[str]) -> dict[str, str]:
    """How a person reads a cell in the panel: its position and short id ("#5 7f3a9c21"),
    as `%plan cells` lists them; never a 36-character id pushing the code off the row."""
    short = short_ids(list(ids))
    return {cell_id: f"#{n} {short[cell_id]}" for n, cell_id in enumerate(ids, start=1)}


def _named(target: str, cell_id: str, names: dict[str, str]) -> str:
    """``target`` (the cell id, then maybe ": first line") with the id as a person reads it."""
    name = names.get(cell_id) or (cell_id[:SHORT_ID] if len(cell_id) > WHOLE_ID else cell_id)
    return name + target[len(cell_id) :] if target.startswith(cell_id) else target


def step_json(text: StepView, names: dict[str, str] | None = None) -> dict[str, Any]:
    """One step for the panel; what it shows as text has its control characters made visible
    (``visible``: bidi overrides and the like would show the reviewer other text); ``names``:
    each cell's name for people (``cell_names``)."""
    cell_id = text.target.split(":")[0] if text.kind.endswith("_cell") else None
    out: dict[str, Any] = {
        "id": text.id,
        "number": text.number,
        "kind": text.kind,
        "target": visible(text.target),
        "title": visible(text.title),
        "reason": visible(text.reason),
        "runs_later": visible(text.runs_later) if text.runs_later else text.runs_later,
        "risk": text.risk,
        "status": text.status,
        "error": visible(text.error) if text.error else text.error,
        "language": text.language,
        "depends_on": text.depends_on,
        "checkpoint": text.checkpoint,
        "run_at_approval": text.run_at_approval,
        "origin": visible(text.origin) if text.origin else text.origin,
        "approved_elsewhere": visible(text.approved_elsewhere) if text.approved_elsewhere else None,
        # The cell a front end can scroll to (go to cell); None for files and shell commands.
        "cell_id": cell_id,
    }
    if text.kind == "mcp_call":  # its arguments are the diff; what it means, the target says
        out["target"] = f"{text.target} ({MCP_NOTE})"
    if text.kind == "shell":
        # What a preview showed (text), and why previews are off here ("" when they work).
        out["preview"] = shell_preview_text(replace(text, shell_note="")) or None
        out["preview_off"] = text.shell_note
    if text.kind == "insert_cell" and ":" not in text.target:
        head = visible(first_line(text.after))
        out["target"] = f"{out['target']}: {head}" if head else f"{out['target']} (empty)"
    if cell_id is not None:
        out["target"] = _named(out["target"], visible(cell_id), names or {})
    if text.kind in SHOW_AS_CELL:
        # A shell step's text is its command, which the core gives as the target.
        out["cell"] = visible(text.after or (text.target if text.kind == "shell" else ""))
        out["diff"] = None
    else:
        out["cell"] = None
        out["diff"] = diff_texts(visible(text.before), visible(text.after))
    return out


def counts(steps: Sequence[StepView]) -> dict[str, int]:
    out = dict.fromkeys(HEADER_COUNTS, 0)
    for step in steps:
        out[step.status] = out.get(step.status, 0) + 1
    return out


def checkpoint_json(
    cp: Checkpoint, numbers: dict[str, int], names: dict[str, str] | None = None
) -> dict[str, Any]:
    step = numbers.get(cp.step or "")
    return {
        "id": cp.id,
        "seq": cp.seq,
        "kind": cp.kind,
        "label": visible(
            (names or {}).get(cp.id) or cp.label or (f"before step {step}" if step else cp.kind)
        ),
        "step": step,
        "at": cp.at.isoformat(timespec="seconds"),
        "active": cp.active,
    }


def revision_json(rev: Revision) -> dict[str, Any]:
    return {
        "number": rev.number,
        "summary": visible(rev.summary),
        "feedback": visible(rev.feedback) if rev.feedback else rev.feedback,
        "steps": len(rev.steps),
    }


def rollback_writes(checkpoints: Sequence[Checkpoint]) -> dict[str, list[str]]:
    """Checkpoint id -> what a rollback to it writes (its snapshots and those of the active
    step checkpoints after it), which the panel's confirmation lists before it is sent. The
    Session refuses, at the rollback, what a step's record does not name."""
    out: dict[str, list[str]] = {}
    later: dict[str, None] = {}
    for cp in sorted(checkpoints, key=lambda c: c.seq, reverse=True):
        if not cp.active:
            continue
        mine = [f"cell {c.cell_id}" for c in cp.cells] + [f"file {f.path}" for f in cp.files]
        out[cp.id] = list(dict.fromkeys([*mine, *later]))
        if cp.kind == "step":
            later.update(dict.fromkeys(mine))
    return out


def build_view(
    *,
    plan: Plan | None,
    steps: Sequence[StepView],
    checkpoints: Sequence[Checkpoint] = (),
    mode: str = "plan",
    backend: str = "",
    backend_description: str = "",
    progress: Progress | None = None,
    error: str | None = None,
    revision_diff: dict[str, Any] | None = None,
    agent: dict[str, Any] | None = None,
    offer: dict[str, Any] | None = None,
    warnings: Sequence[str] = (),
    checkpoint_names: dict[str, str] | None = None,
    cell_names: dict[str, str] | None = None,
    hashes: Mapping[str, str] | None = None,
    previewing: Collection[str] = (),
) -> dict[str, Any]:
    """``offer``: a follow-up the error box proposes, such as forcing a refused rollback;
    ``checkpoint_names``: each checkpoint's name for people
    (``planbook.present.checkpoint_names``); ``cell_names``: each cell's (``cell_names``);
    ``hashes``: each step's hash as the Session computes it (``Session.step_hashes``), which
    an approval from this view sends back; ``previewing``: ids of the shell steps whose
    preview is running (``Session.previewing``)."""
    numbers = {s.id: s.number for s in steps}
    writes = rollback_writes(checkpoints)
    return {
        "header": {
            "plan_id": plan.id if plan else None,
            "task": visible(plan.task) if plan else "",
            "state": plan.state if plan else "idle",
            "revision": plan.current.number if plan else 0,
            "mode": mode,
            "backend": backend,
            "backend_description": visible(backend_description),
            "counts": counts(steps),
            "warnings": [visible(w) for w in warnings],
        },
        "steps": [
            {
                **step_json(s, cell_names),
                "hash": (hashes or {}).get(s.id),
                **({"previewing": True} if s.id in previewing else {}),
            }
            for s in steps
        ],
        "checkpoints": [
            {**checkpoint_json(cp, numbers, checkpoint_names), "writes": writes.get(cp.id, [])}
            for cp in checkpoints
        ],
        "revisions": [revision_json(r) for r in plan.revisions] if plan else [],
        "revision_diff": revision_diff,
        "progress": (progress or Progress()).as_json(),
        "error": visible(error) if error else error,
        "offer": offer if error else None,
        "agent": agent,
    }


def _describe(step: Step) -> str:
    """A step as text, so two versions of it can be diffed line by line."""
    op = step.operation
    data = op.model_dump(exclude={"kind"})
    body = ""
    for key in ("source", "content", "command"):
        if key in data:
            body = str(data.pop(key))
    if "edits" in data:
        body = "\n".join(f"- {e['search']}\n+ {e['replace']}" for e in data.pop("edits"))
    head = " ".join(f"{k}={v}" for k, v in sorted(data.items()) if v not in (None, ""))
    return f"{op.kind} {head}\nreason: {step.reason}\n\n{body}"


def _target(step: Step) -> str:
    op = step.operation
    path = getattr(op, "path", None)
    if isinstance(path, str):
        return path
    cell_id = getattr(op, "cell_id", None)
    if isinstance(cell_id, str):
        return cell_id  # shown after the kind: "edit cell c3"
    command = getattr(op, "command", None)
    return command if isinstance(command, str) else ""


def revision_diff(plan: Plan, old: int, new: int) -> dict[str, Any]:
    """What changed from revision `old` to `new`: steps added, removed, changed or kept.

    Steps are matched by id first, then by kind and target (a revision drafted afresh gives its
    steps new ids, but "edit cell c3" is still the same step to the person reading it)."""
    a, b = plan.revision(old).steps, plan.revision(new).steps
    unmatched = {s.id: s for s in a}
    by_target: dict[tuple[str, str], list[Step]] = {}
    for s in a:
        by_target.setdefault((s.operation.kind, _target(s)), []).append(s)
    changes: list[dict[str, Any]] = []
    for step in b:
        prior = unmatched.get(step.id)
        if prior is None:
            prior = next(
                (
                    p
                    for p in by_target.get((step.operation.kind, _target(step)), [])
                    if p.id in unmatched
                ),
                None,
            )
        if prior is None:
            change, diff = "added", diff_texts("", _describe(step))
        else:
            del unmatched[prior.id]
            before, after = _describe(prior), _describe(step)
            change = "same" if before == after else "changed"
            diff = diff_texts(before, after)
        changes.append(
            {"change": change, "kind": step.operation.kind, "target": _target(step), "diff": diff}
        )
    for prior in unmatched.values():
        changes.append(
            {
                "change": "removed",
                "kind": prior.operation.kind,
                "target": _target(prior),
                "diff": diff_texts(_describe(prior), ""),
            }
        )
    return {"from": old, "to": new, "changes": changes}


def merge(view: dict[str, Any], live: dict[str, Any]) -> dict[str, Any]:
    """The view with the live overrides sent during a run (step statuses, progress, error,
    agent) applied; the front end does the same (js/panel.js ``merged``)."""
    if not live:
        return view
    out = dict(view)
    patches: dict[str, dict[str, Any]] = live.get("steps", {})
    if patches:
        out["steps"] = [{**s, **patches.get(s["id"], {})} for s in view.get("steps", [])]
        counts = dict.fromkeys(HEADER_COUNTS, 0)
        for step in out["steps"]:
            counts[step["status"]] = counts.get(step["status"], 0) + 1
        out["header"] = {**view.get("header", {}), "counts": counts}
    for key in ("progress", "error", "offer", "agent"):
        if key in live:
            out[key] = live[key]
    return out
