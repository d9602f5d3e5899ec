"""What a shell step would do to the workspace, seen by running it once in an overlay.

Stored on the step (``Step.preview``) so every surface shows the same thing; not part of the
approval hash (engine/approval.py): it says what the command did once, not what the step is.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import ConfigDict, Field

from planbook.model.base import PlanbookModel

#: The one line every preview and shell record carries: what no layer can hold.
OUTSIDE_ANY_LAYER = (
    "not in any layer: network calls, processes it started (ended with it), changes outside "
    "the workspace"
)


class PreviewChange(PlanbookModel):
    """One path the command changed in the preview."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    kind: Literal["created", "changed", "deleted", "mode"]
    entry: Literal["file", "folder", "symlink"] = "file"
    mode_before: int | None = None
    mode_after: int | None = None
    digest: str = Field(default="", description="SHA-256 of the bytes after (a symlink: target).")
    diff: str = Field(default="", description="A bounded unified diff, or one line saying why not.")


class ShellPreview(PlanbookModel):
    """A preview of a shell step: its changes, exit code and bounded output, or why none."""

    # frozen, as a step's other fields' values: see AskFirst (model/plan.py)
    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str
    #: "" when the preview ran; else one line: "preview not possible: ..." or "refused: ...".
    problem: str = ""
    exit_code: int | None = None
    timed_out: bool = False
    output: str = ""
    changes: list[PreviewChange] = Field(default_factory=list)
    at: datetime = Field(default_factory=lambda: datetime.now(UTC).replace(microsecond=0))
    #: After an approved run: whether it changed what the preview showed (one line).
    after_run: str | None = None

    @property
    def summary(self) -> str:
        if self.problem:
            return self.problem
        counts: dict[str, int] = {}
        for c in self.changes:
            counts[c.kind] = counts.get(c.kind, 0) + 1
        words = {"mode": "mode changed"}
        parts = [
            f"{counts[k]} {words.get(k, k)}"
            for k in ("created", "changed", "deleted", "mode")
            if counts.get(k)
        ]
        changes = ", ".join(parts) or "no changes to the workspace"
        if self.timed_out:
            # what it wrote until it was stopped; a preview never applies anything
            return (
                "preview timed out: the command was stopped at its time limit and nothing was "
                f"applied; until then: {changes}"
            )
        return f"preview (exit {self.exit_code}): {changes}"
