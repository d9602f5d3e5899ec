"""What the in-cell review shows of a shell step: its command, and its preview (what running
it once in an overlay changed: files created, changed with their diff, deleted, modes changed,
its exit code and output) or why there is none.

A shell step has no cell of its own: the page draws its box after the notebook's last cell
(``anchor: end``), where a placeholder for a new cell at the end would go. Everything here can
come from a received notebook (a stored preview is whatever its sender wrote), so every text
has its control characters made visible and every part is bounded; the page only ever sets
text, never HTML.
"""

from __future__ import annotations

from typing import Any

from planbook.model.plan import Step
from planbook.model.preview import PreviewChange, ShellPreview
from planbook.present.safe import visible

#: Changes listed on the page; the rest are counted (the panel and `%plan` list them all).
MOST_CHANGES = 50
#: Characters of one change's diff, of the output and of the command the page is sent.
MOST_DIFF_CHARS = 20_000
MOST_OUTPUT_CHARS = 4_000
MOST_COMMAND_CHARS = 4_000


def bounded(text: str, most: int) -> str:
    """``text`` with its control characters visible, cut to ``most`` characters."""
    text = visible(text)
    if len(text) <= most:
        return text
    return text[:most] + f"\n[... {len(text) - most:,} more characters]"


def _mode(mode: int | None) -> str | None:
    return None if mode is None else f"{mode & 0o7777:o}"


def _change(change: PreviewChange) -> dict[str, Any]:
    return {
        "path": bounded(change.path, 1_000),
        "kind": change.kind,
        "entry": change.entry,
        "mode_before": _mode(change.mode_before),
        "mode_after": _mode(change.mode_after),
        "diff": bounded(change.diff, MOST_DIFF_CHARS),
    }


def preview_json(preview: ShellPreview) -> dict[str, Any]:
    """A preview as the page draws it."""
    return {
        "summary": bounded(preview.summary, 1_000),
        "problem": bounded(preview.problem, 1_000),
        "exit_code": preview.exit_code,
        "timed_out": preview.timed_out,
        "output": bounded(preview.output, MOST_OUTPUT_CHARS),
        "changes": [_change(c) for c in preview.changes[:MOST_CHANGES]],
        "more": max(0, len(preview.changes) - MOST_CHANGES),
        "after_run": bounded(preview.after_run, 1_000) if preview.after_run else None,
    }


def shell_entry(step: Step, command: str, *, previewing: bool, preview_off: str) -> dict[str, Any]:
    """The parts of a shell step's entry in the plan message that only shell steps have."""
    return {
        "cell_id": None,
        "anchor": {"end": True},
        "command": bounded(command, MOST_COMMAND_CHARS),
        "title": bounded(f"$ {command}", 200),
        "runs": False,
        "diff": None,
        "previewing": previewing,
        "preview": preview_json(step.preview) if step.preview is not None else None,
        # Why no preview can run here ("" when previews work): the page offers none then.
        "preview_off": visible(preview_off),
    }
