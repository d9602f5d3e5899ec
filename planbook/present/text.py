"""The plan as text: markdown for Jupyter's rich display, plain text for terminals, and what
changed between two revisions."""

from __future__ import annotations

from collections.abc import Sequence

from planbook.engine.unified import unified_diff as engine_unified_diff
from planbook.model.checkpoint import Checkpoint
from planbook.model.plan import Plan
from planbook.model.preview import OUTSIDE_ANY_LAYER, ShellPreview
from planbook.present.checkpoint_names import checkpoint_names
from planbook.present.safe import md_fence, md_prose, md_text, visible
from planbook.present.views import MCP_NOTE, StepView, step_title

__all__ = [
    "checkpoints_text",
    "color_line",
    "plan_markdown",
    "plan_text",
    "preview_lines",
    "step_title",
    "unified_diff",
]

# No emoji: they show as empty boxes where no font has them; the title names the change.
_MAX_DIFF_LINES = 200
#: What a pending step approved on another machine says (engine/received.py).
ELSEWHERE = "approved elsewhere by {}: not run until you approve it here"


def unified_diff(before: str, after: str, name: str) -> str:
    return engine_unified_diff(before, after, name, most=_MAX_DIFF_LINES, more=" (see the panel)")


def _body(view: StepView) -> str:
    if view.kind == "shell":
        return f"$ {view.before or view.target}\n" + shell_preview_text(view)
    if view.kind == "run_cell":
        return view.before if view.before.endswith("\n") else view.before + "\n"
    if view.kind == "move_cell":
        return ""
    if view.kind == "mcp_call":
        return view.after  # the arguments, as pretty JSON
    return unified_diff(view.before, view.after, view.target.split(":")[0])


def _mode(mode: int | None) -> str:
    return "-" if mode is None else f"{mode:o}"


def preview_lines(preview: ShellPreview) -> list[str]:
    """A shell step's preview as text: what it changes (diffs for text files), its exit code
    and output, and what no layer holds; control characters made visible (``visible``)."""
    out = [f"# {preview.summary}"]
    if preview.problem and not preview.changes:
        return out
    for c in preview.changes:
        what = {"file": "", "folder": " folder", "symlink": " symlink"}[c.entry]
        if c.kind == "mode":
            out.append(f"# mode{what} {c.path}: {_mode(c.mode_before)} -> {_mode(c.mode_after)}")
            continue
        mode = f" (mode {_mode(c.mode_after)})" if c.kind == "created" and c.mode_after else ""
        out.append(f"# {c.kind}{what} {c.path}{mode}")
        if c.diff:
            out += c.diff.rstrip("\n").splitlines()
    if preview.output:
        lines = preview.output.splitlines()
        out.append("# output:" + ("" if len(lines) <= 10 else f" (last 10 of {len(lines)} lines)"))
        out += [f"#   {line}" for line in lines[-10:]]
    if preview.after_run:
        out.append(f"# after the run: {preview.after_run}")
    out.append(f"# {OUTSIDE_ANY_LAYER}")
    # The output and the paths are the command's: control characters in them are shown.
    return [visible(line) for line in out]


def shell_preview_text(view: StepView) -> str:
    lines = [f"# {view.shell_note}"] if view.shell_note else []
    if view.preview is not None:
        lines += preview_lines(view.preview)
    return "".join(line + "\n" for line in lines)


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
    """The plan as markdown for Jupyter's rich display. Every stored string is escaped
    (``planbook.present.safe``): words as words, code in fences nothing inside can close, the
    model's prose with its formatting but no HTML, links or images."""
    head = [md_text(line) for line in header(plan, mode=mode, backend=backend)]
    out = [f"### {head[0]}", "", *(f"{line}  " for line in head[1:]), ""]
    if plan.current.summary:
        out += [md_prose(plan.current.summary), ""]
    for v in views:
        status = md_text(v.status.replace("_", " "))
        # The title's names, paths and commands are already safe code spans (step_title).
        out.append(f"**{v.number}. {v.title}** · {md_text(v.risk)} risk · *{status}*")
        if v.reason:
            out.append(md_prose(v.reason, prefix="> "))
        if v.runs_later:
            out.append(f"> **runs code later:** {md_text(v.runs_later, prefix='> ')}")
        if v.approved_elsewhere:
            out.append(f"> **{md_text(ELSEWHERE.format(v.approved_elsewhere), prefix='> ')}**")
        if v.runner:
            out.append(f"> {_runner(v, markdown=True)}")
        if v.error:
            error = md_text(v.error, prefix="> ")
            out.append(f"> **failed:** {error}" if v.status == "failed" else f"> **!** {error}")
        if v.depends_on:
            out.append(f"> builds on step {', '.join(map(str, v.depends_on))}")
        if v.kind == "mcp_call":
            out.append(f"> {MCP_NOTE}")
        body = _body(v)
        if body:
            fence = {"run_cell": "python", "shell": "sh", "mcp_call": "json"}.get(v.kind, "diff")
            out += ["", md_fence(body, fence)]
        out.append("")
    if not views:
        out.append("*no steps yet: stage one with `%%propose`*")
    return "\n".join(out)


def plan_text(
    plan: Plan, views: list[StepView], *, mode: str, backend: str, color: bool = False
) -> str:
    """The plan for a terminal: control characters in stored text show as escapes
    (``visible``), so only the colours added here reach the terminal as sequences."""
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
        # Split on newlines only: a carriage return in the body must show as one (``visible``).
        body = _body(v).rstrip("\n")
        out += ["   " + line for line in body.split("\n")] if body else []
        out.append("")
    if not views:
        out.append("no steps yet")
    shown = visible("\n".join(out).rstrip()).split("\n")
    return "\n".join(_color_body(line) if color else line for line in shown) + "\n"


def _runner(view: StepView, *, markdown: bool = False) -> str:
    """Who runs an approved or running step; where it is on another host (which cannot be
    checked from here, so the step waits for it), how to take it over if that host is gone.
    ``markdown``: the runner (stored in the notebook, so anyone's words) escaped for it."""
    runner = md_text(view.runner or "") if markdown else view.runner
    line = f"{md_text(view.status) if markdown else view.status} in {runner}"
    if view.runner_elsewhere:
        line += (
            f"; if that process is gone, take the step over: `%plan takeover {view.number}` "
            f"(or `planbook takeover NOTEBOOK {view.number}`)"
        )
    return line


def _color_body(line: str) -> str:
    """A body line (indented three spaces) coloured as a diff line; others as they are."""
    return line[:3] + color_line(line[3:]) if line.startswith("   ") else line


def color_line(line: str) -> str:
    """A diff line in terminal colours (added green, removed red, hunk heads cyan)."""
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
    return visible("\n".join(out))


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
    return [visible(line) for line in lines] or ["no differences"]
