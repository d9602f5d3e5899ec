"""Preview a shell step: run it once in the sandbox with the workspace as an overlay and keep
what its layer would change (model/preview.py), or one line saying why it cannot be shown.

The preview runs with no network, the sandbox's time, output and process limits, and writes
landing in a throwaway layer: the workspace is never touched. Each created or changed text file
gets a bounded unified diff against what the workspace holds now (the same diff a file step
shows); binary or large files get one line.
"""

from __future__ import annotations

import re
from pathlib import Path

from planbook.engine.executor.shell_layer import overlay_off_reason, protected_in
from planbook.engine.rules.preview_fit import why_not_previewable
from planbook.engine.unified import unified_diff
from planbook.errors import LayerRefused, UnknownStep, UsageMistake
from planbook.model.operations import Shell
from planbook.model.plan import Plan, Step
from planbook.model.preview import PreviewChange, ShellPreview
from planbook.workspace.files import Workspace
from planbook.workspace.layer import Change, read_layer
from planbook.workspace.overlay import layer, run_preview

__all__ = ["PREVIEW_TIMEOUT", "preview_shell", "shell_step"]

#: Seconds a preview may run at most (less when the step's own timeout is shorter).
PREVIEW_TIMEOUT = 30.0
#: Bytes of a file a diff is made of; past it the change is said in one line.
_DIFF_BYTES = 256 * 1024
_DIFF_LINES = 200
_OUTPUT_CHARS = 4000
#: What a command says when it finds no network (the sandbox has none).
_NO_NETWORK = re.compile(
    r"(Network is unreachable|Temporary failure in name resolution|Could not resolve host|"
    r"Name or service not known|socket: Operation not permitted|NewConnectionError|"
    r"could not resolve|Connection refused)",
    re.IGNORECASE,
)


def _text(data: bytes) -> str | None:
    if b"\x00" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _read(path: Path) -> bytes | None:
    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_size > _DIFF_BYTES:
            return None
        return path.read_bytes()
    except OSError:
        return None


def _diff(change: Change, root: Path, upper: Path) -> str:
    if change.entry == "symlink":
        return f"symlink -> {change.target}"
    if change.entry == "folder" or change.kind in ("deleted", "mode"):
        return ""
    after_path = upper / change.path
    if change.size > _DIFF_BYTES:
        return f"{change.size:,} bytes (too large to show as a diff)"
    after = _text(after_path.read_bytes())
    before_bytes = _read(root / change.path) if change.before == "file" else b""
    before = _text(before_bytes) if before_bytes is not None else None
    if after is None or before is None:
        return f"binary file, {change.size:,} bytes"
    return unified_diff(before, after, change.path, most=_DIFF_LINES, more="")


def shell_step(plan: Plan, number: int) -> tuple[Step, Shell]:
    """Step ``number`` of the plan and its command, or a one-line mistake."""
    if not 1 <= number <= len(plan.steps):
        raise UnknownStep(number, len(plan.steps))
    step = plan.steps[number - 1]
    if not isinstance(step.operation, Shell):
        kind = step.operation.kind.replace("_", " ")
        raise UsageMistake(
            f"step {number} is {'an' if kind[0] in 'aeiou' else 'a'} {kind} step: only shell "
            "steps are previewed (the review already shows what the others change)"
        )
    return step, step.operation


def preview_shell(workspace: Workspace, op: Shell) -> ShellPreview:
    """Run ``op`` once in an overlay and say what it would change (never raises for what the
    command does: a refused layer or an impossible preview is the preview's ``problem``)."""
    root = workspace.root
    off = overlay_off_reason(root)
    if off:
        return ShellPreview(command=op.command, problem=f"preview not possible: {off}")
    why = why_not_previewable(op.command, root)
    if why:
        return ShellPreview(command=op.command, problem=why)
    with layer(root) as lay:
        result = run_preview(op.command, root, lay, timeout=min(op.timeout, PREVIEW_TIMEOUT))
        output = (result.stdout + result.stderr).strip()
        if len(output) > _OUTPUT_CHARS:
            output = output[:_OUTPUT_CHARS] + f"\n[... {len(output) - _OUTPUT_CHARS:,} more]"
        base = {
            "command": op.command,
            "exit_code": result.returncode,
            "timed_out": result.timed_out,
            "output": output,
        }
        if result.returncode not in (0, None) and _NO_NETWORK.search(output):
            problem = "preview not possible: the command needs the network, and a preview has none"
            return ShellPreview(**base, problem=problem)  # type: ignore[arg-type]
        try:
            changes = read_layer(root, lay.upper)
        except LayerRefused as exc:
            return ShellPreview(**base, problem=str(exc))  # type: ignore[arg-type]
        shown = [
            PreviewChange(
                path=c.path,
                kind=c.kind,
                entry=c.entry,
                mode_before=c.mode_before,
                mode_after=c.mode_after,
                digest=c.digest,
                diff=_diff(c, root, lay.upper),
            )
            for c in changes.changes
        ]
    notebook = protected_in(changes, root, workspace.protected_paths, settings=False)
    if notebook:
        base["problem"] = (
            f"refused: it changes {notebook[0]}, the notebook (cell steps only): approving it "
            "would apply nothing"
        )
    return ShellPreview(**base, changes=shown)  # type: ignore[arg-type]
