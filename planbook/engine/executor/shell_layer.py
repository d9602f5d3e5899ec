"""An approved shell step as one transaction: run it in an overlay, then apply its layer.

The command runs with the workspace as an overlay's lower layer (workspace/overlay.py: the
machine, network and environment as approved steps always had, its own pid namespace). When it
exits, under the notebook's lock: its layer is read (workspace/layer.py) and checked: the same
protected settings as the settings guard (``planbook.toml``, git's config, hooks and attributes,
the notebook itself) and confinement (no symlink out, no FIFO or device, bounded size); a layer
that fails is refused whole, nothing applied. Otherwise every path it changes is checkpointed
(kind, mode, bytes, or absence) and the layer applied as one change; an apply that fails half
way is put back from that checkpoint. The step's record then says what was applied, whether it
is what the preview showed, and what no layer holds.
"""

from __future__ import annotations

from pathlib import Path

from planbook.engine.executor.record import StepRecords
from planbook.errors import LayerRefused
from planbook.model.checkpoint import Checkpoint
from planbook.model.operations import Shell
from planbook.model.plan import Step
from planbook.model.preview import OUTSIDE_ANY_LAYER, ShellPreview
from planbook.workspace import sandbox
from planbook.workspace.files import ShellResult
from planbook.workspace.layer import ChangeSet, read_layer
from planbook.workspace.layer_apply import apply_layer, hash_after, prior_state
from planbook.workspace.overlay import Layer, make_layer, overlay_probe, remove_layer, usable_for
from planbook.workspace.settings_guard import SettingsGuard

__all__ = ["ShellLayers", "compare_with_preview", "overlay_off_reason", "protected_in"]


def overlay_off_reason(root: Path) -> str:
    """Why shell steps cannot run in an overlay for this workspace, or "" when they can."""
    status = overlay_probe()
    if not status.available:
        return status.reason
    bwrap = sandbox.probe()  # looked up each time: tests stand in a probe of their own
    if not bwrap.available:
        return bwrap.reason
    return usable_for(root)


def protected_in(
    changes: ChangeSet, root: Path, notebooks: tuple[Path, ...], *, settings: bool = True
) -> list[str]:
    """The changed paths that are the notebook (changed with cell steps only) or, with
    ``settings``, a protected setting (the settings guard's: a command no one reviewed)."""
    roots = SettingsGuard(root, notebooks).roots if settings else notebooks
    hits = []
    for change in changes.changes:
        path = root / change.path
        if change.entry == "folder" and change.kind == "mode":
            continue
        if any(path == r or r in path.parents or path in r.parents for r in roots):
            hits.append(change.path)
    return hits


def compare_with_preview(preview: ShellPreview | None, changes: ChangeSet) -> str | None:
    """One line: does what the run changed match what the preview showed?"""
    if preview is None or preview.problem:
        return None
    shown = {c.path: (c.kind, c.entry, c.digest, c.mode_after) for c in preview.changes}
    done = {c.path: c.signature for c in changes.changes}
    if shown == done:
        return "the changes match the preview (same paths, content and modes)"
    differ = sorted(p for p in set(shown) | set(done) if shown.get(p) != done.get(p))
    named = ", ".join(differ[:5]) + (f" and {len(differ) - 5} more" if len(differ) > 5 else "")
    return f"the changes differ from the preview: {named}"


class ShellLayers(StepRecords):
    """The executor's part that runs an approved shell step as a transaction."""

    def _layered(self) -> bool:
        return not overlay_off_reason(self.workspace.root)

    def _run_layered(self, op: Shell, guard: SettingsGuard | None) -> tuple[ShellResult, Layer]:
        """Run ``op`` with the workspace as an overlay: its result and its layer (the caller
        applies it under the lock with ``_apply`` and removes it)."""
        lay = make_layer(self.workspace.root)
        try:
            result = self.workspace.run_shell(
                op.command, timeout=op.timeout, guard=guard, layer=lay
            )
        except BaseException:
            remove_layer(lay)
            raise
        return result, lay

    def _apply(
        self, lay: Layer, step: Step, checkpoint: Checkpoint | None, *, reviewed: bool
    ) -> str:
        """Check, checkpoint and apply the layer (see the module's docstring); the record's
        lines. ``reviewed``: the person approved the step, so protected settings other than
        the notebook may change (as without an overlay)."""
        root = self.workspace.root
        changes = read_layer(root, lay.upper)
        hits = protected_in(changes, root, self.workspace.protected_paths, settings=not reviewed)
        if hits:
            what = (
                "protected settings a command no one reviewed may not change"
                if not reviewed
                else "the notebook, which changes through cell steps only"
            )
            raise LayerRefused(
                f"refused: the command changed {', '.join(hits[:3])}: {what} (stage that "
                "change as its own step); nothing of its layer was applied"
            )
        priors = prior_state(root, (c.path for c in changes.changes), self.workspace.max_bytes)
        writer = self.checkpoints
        if checkpoint is not None:
            checkpoint.files = writer.snapshot_entries(priors)
        try:
            apply_layer(root, lay.upper, changes)
        except OSError as exc:
            for snap in reversed(checkpoint.files if checkpoint is not None else []):
                writer.restore_file(snap)
            raise LayerRefused(
                f"refused: applying the command's layer failed ({exc.strerror or exc}); what "
                "was applied was put back"
            ) from None
        if checkpoint is not None:
            after = {c.path: hash_after(c) for c in changes.changes}
            checkpoint.files = [
                s.model_copy(update={"after_hash": after[s.path]}) for s in checkpoint.files
            ]
            checkpoint.label = checkpoint.label.split(":")[0] + f": {changes.summary()}"
        lines = [f"applied {changes.summary()}"]
        too_big = [p.path for p in priors if p.too_big]
        if too_big:
            lines.append(
                f"not undoable by rollback: {', '.join(too_big[:3])} (over the "
                f"{self.workspace.max_bytes:,}-byte checkpoint limit)"
            )
        matched = compare_with_preview(step.preview, changes)
        if matched is not None and step.preview is not None:
            step.preview = step.preview.model_copy(update={"after_run": matched})
            lines.append(matched)
        lines.append(OUTSIDE_ANY_LAYER)
        return "; ".join(lines)
