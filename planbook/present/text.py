"""The plan as text: markdown for Jupyter's rich display, plain text for terminals, and what
changed between two revisions."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from planbook.model.checkpoint import Checkpoint
from planbook.model.plan import Plan
from planbook.present.checkpoint_names import checkpoint_names
from planbook.present.views import MCP_NOTE, StepView, step_title

__all__ = ["checkpoints_text", "plan_markdown", "plan_text", "step_title", "unified_diff"]

# No emoji: they show as empty boxes where no font has them; the title names the change.
_MAX_DIFF_LINES = 200
#: What a pending step approved on another machine says (engine/received.py).
ELSEWHERE = "approved elsewhere by {}: not run until you approve it here"


def unified_diff(before: str, after: str, name: str) -> str:
    lines = list(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{name}",
            tofile=f"b/{name}",
            n=3,
        )
    )
    if len(lines) > _MAX_DIFF_LINES:
        hidden = len(lines) - _MAX_DIFF_LINES
        lines = [*lines[:_MAX_DIFF_LINES], f"... {hidden} more diff lines (see the panel)\n"]
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _body(view: StepView) -> str:
    if view.kind == "shell":
        return f"$ {view.before or view.target}\n"
    if view.kind == "run_cell":
        return view.before if view.before.endswith("\n") else view.before + "\n"
    if view.kind == "move_cell":
        return ""
    if view.kind == "mcp_call":
        return view.after  # the arguments, as pretty JSON
    return unified_diff(view.before, view.after, view.target.split(":")[0])


def header(plan: Plan, *, mode: str, backend: str) -> list[str]:
    counts = plan.counts()
    summary = " · ".join(f"{k.replace('_', ' ')} {v}" for k, v in sorted(counts.items()))
    return [
        f"plan {plan.id}" + (f": {plan.task}" if plan.task else ""),
        f"state: {plan.state.replace('_', ' ')} · revision {plan.current.number} · mode: {mode}",
        f"notebook: {backend}",
        f"steps: {summary or 'none'}",
    ]


def plan_markdown(plan: Plan, views: list[StepView], *, mode: str, backend: str) -> str:
    head = header(plan, mode=mode, backend=backend)
    out = [f"### {head[0]}", "", *(f"{line}  " for line in head[1:]), ""]
    if plan.current.summary:
        out += [plan.current.summary, ""]
    for v in views:
        status = v.status.replace("_", " ")
        out.append(f"**{v.number}. {v.title}** · {v.risk} risk · *{status}*")
        if v.reason:
            out.append(f"> {v.reason}")
        if v.runs_later:
            out.append(f"> **runs code later:** {v.runs_later}")
        if v.approved_elsewhere:
            out.append(f"> **{ELSEWHERE.format(v.approved_elsewhere)}**")
        if v.runner:
            out.append(f"> {_runner(v)}")
        if v.error:
            out.append(f"> **failed:** {v.error}" if v.status == "failed" else f"> **!** {v.error}")
        if v.depends_on:
            out.append(f"> builds on step {', '.join(map(str, v.depends_on))}")
        if v.kind == "mcp_call":
            out.append(f"> {MCP_NOTE}")
        body = _body(v)
        if body:
            fence = {"run_cell": "python", "shell": "sh", "mcp_call": "json"}.get(v.kind, "diff")
            out += ["", f"```{fence}", body.rstrip("\n"), "```"]
        out.append("")
    if not views:
        out.append("*no steps yet: stage one with `%%propose`*")
    return "\n".join(out)


def plan_text(
    plan: Plan, views: list[StepView], *, mode: str, backend: str, color: bool = False
) -> str:
    out = [*header(plan, mode=mode, backend=backend), ""]
    if plan.current.summary:
        out += [plan.current.summary, ""]
    for v in views:
        out.append(f"{v.number}. [{v.status}] {v.title.replace('`', '')}  ({v.risk} risk)")
        if v.reason:
            out.append(f"   why: {v.reason}")
        if v.runs_later:
            out.append(f"   runs code later: {v.runs_later}")
        if v.approved_elsewhere:
            out.append(f"   {ELSEWHERE.format(v.approved_elsewhere)}")
        if v.runner:
            out.append(f"   {_runner(v)}")
        if v.error:
            out.append(f"   ! {v.error}")
        if v.kind == "mcp_call":
            out.append(f"   {MCP_NOTE}")
        for line in _body(v).splitlines():
            out.append("   " + _color(line) if color else "   " + line)
        out.append("")
    if not views:
        out.append("no steps yet")
    return "\n".join(out).rstrip() + "\n"


def _runner(view: StepView) -> str:
    """Who runs an approved or running step; where it is on another host (which cannot be
    checked from here, so the step waits for it), how to take it over if that host is gone."""
    line = f"{view.status} in {view.runner}"
    if view.runner_elsewhere:
        line += (
            f"; if that process is gone, take the step over: `%plan takeover {view.number}` "
            f"(or `planbook takeover NOTEBOOK {view.number}`)"
        )
    return line


def _color(line: str) -> str:
    if line.startswith("+") and not line.startswith("+++"):
        return f"\x1b[32m{line}\x1b[0m"
    if line.startswith("-") and not line.startswith("---"):
        return f"\x1b[31m{line}\x1b[0m"
    if line.startswith("@@"):
        return f"\x1b[36m{line}\x1b[0m"
    return line


def checkpoints_text(checkpoints: list[Checkpoint], plans: Sequence[Plan] = ()) -> str:
    """One line per checkpoint, named for people (``planbook.present.checkpoint_names``), with the
    id
    and number that ``%rollback`` takes."""
    if not checkpoints:
        return "no checkpoints yet: they are written when approved steps run"
    names = checkpoint_names(plans, checkpoints)
    numbers = {cp.id: n for n, cp in enumerate(checkpoints, start=1)}
    out = []
    for n, cp in enumerate(checkpoints, start=1):
        undone_by = numbers.get(cp.undone_by or "")
        state = (
            ""
            if cp.active
            else f"  [rolled back by {undone_by}]"
            if undone_by
            else f"  [rolled back by {cp.undone_by}]"
        )
        out.append(f"{n}. {names[cp.id]}{state}  ({cp.id}, {cp.at:%Y-%m-%d %H:%M:%S})")
    return "\n".join(out)


#: A step the person withdrew in a revision (rejected): the diff says "withdrawn".
_WITHDRAWN = frozenset({"rejected"})


def revision_diff(plan: Plan, a: int, b: int) -> list[str]:
    """What changed from revision ``a`` to ``b``, a line each: steps added, changed, moved,
    withdrawn, put back or removed (revisions are never edited in place, so this is what the
    person saw each time)."""
    old, new = plan.revision(a), plan.revision(b)
    old_by = {s.id: (i, s) for i, s in enumerate(old.steps, start=1)}
    new_by = {s.id: (i, s) for i, s in enumerate(new.steps, start=1)}
    lines = []
    if old.summary != new.summary:
        lines.append("summary changed")
    if new.feedback and new.parent == a:
        lines.append(f"feedback: {new.feedback}")
    for sid, (i, s) in new_by.items():
        if sid not in old_by:
            mark = "withdrawn" if s.status in _WITHDRAWN else "added"
            sign = "-" if mark == "withdrawn" else "+"
            lines.append(f"{sign} step {i} {mark}: {step_title(s)}")
            continue
        j, o = old_by[sid]
        if s.status in _WITHDRAWN and o.status not in _WITHDRAWN:
            lines.append(f"- step {i} withdrawn: {step_title(s)}")
        elif o.status in _WITHDRAWN and s.status not in _WITHDRAWN:
            lines.append(f"+ step {i} put back: {step_title(s)}")
        elif o.operation != s.operation:
            lines.append(f"~ step {i} changed: {step_title(s)}")
        elif i != j:
            lines.append(f"> step {j} moved to {i}: {step_title(s)}")
    for sid, (j, o) in old_by.items():
        if sid not in new_by:
            lines.append(f"- step {j} removed: {step_title(o)}")
    return lines or ["no differences"]
