"""The plan as text: markdown for Jupyter's rich display, plain text for terminals, and what
changed between two revisions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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


@dataclass(frozen=True, slots=True)
class _Note:
    """One line said under a step's title, the same for every surface; each writes it its
    own way (``_note_markdown``, ``_note_text``)."""

    #: Our words ("why", "failed"; "!" takes no colon), or "" for a line without one.
    label: str
    #: The stored text: anyone's words, escaped by each surface for itself.
    value: str
    #: The model's prose (a reason): markdown keeps its emphasis and lists (``md_prose``)
    #: and shows it without the label, as the quote under the title.
    prose: bool = False
    #: Shown in bold in markdown: a warning the person must not miss.
    strong: bool = False
    #: Our own text after the value, already safe markdown (a command in a code span).
    tail: str = ""


def _notes(v: StepView) -> list[_Note]:
    """What is said under step ``v``'s title, in order."""
    notes = []
    if v.reason:
        notes.append(_Note("why", v.reason, prose=True))
    if v.runs_later:
        notes.append(_Note("runs code later", v.runs_later))
    if v.approved_elsewhere:
        notes.append(_Note("", ELSEWHERE.format(v.approved_elsewhere), strong=True))
    if v.runner:
        notes.append(_Note("", f"{v.status} in {v.runner}", tail=_takeover(v)))
    if v.error:
        notes.append(_Note("failed" if v.status == "failed" else "!", v.error))
    if v.depends_on:
        notes.append(_Note("", f"builds on step {', '.join(map(str, v.depends_on))}"))
    if v.kind == "mcp_call":
        notes.append(_Note("", MCP_NOTE))
    return notes


def _label(note: _Note) -> str:
    return note.label if note.label == "!" else f"{note.label}:"


def _note_markdown(note: _Note) -> str:
    if note.prose:
        return md_prose(note.value, prefix="> ")
    value = md_text(note.value, prefix="> ")
    value = f"**{value}**" if note.strong else value
    return f"> {f'**{_label(note)}** ' if note.label else ''}{value}{note.tail}"


def _note_text(note: _Note) -> str:
    return f"   {f'{_label(note)} ' if note.label else ''}{note.value}{note.tail}"


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
        out += [_note_markdown(note) for note in _notes(v)]
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
        out += [_note_text(note) for note in _notes(v)]
        # Split on newlines only: a carriage return in the body must show as one (``visible``).
        body = _body(v).rstrip("\n")
        if body:
            out.append("   " + body.replace("\n", "\n   "))
        out.append("")
    if not views:
        out.append("no steps yet")
    shown = visible("\n".join(out).rstrip())
    if not color:
        return shown + "\n"
    return "\n".join(_color_body(line) for line in shown.split("\n")) + "\n"


def _takeover(view: StepView) -> str:
    """How to take over a step whose runner is on another host (which cannot be checked from
    here, so the step waits for it) if that host is gone; "" on this host."""
    if not view.runner_elsewhere:
        return ""
    return (
        f"; if that process is gone, take the step over: `%plan takeover {view.number}` "
        f"(or `planbook takeover NOTEBOOK {view.number}`)"
    )


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
