"""Retention and sharing: keep the last K checkpoints (and plans), drop blobs nobody names any
more, and strip planbook's metadata from a notebook for sharing (also as a git clean filter).

The limits come from ``[tool.planbook]`` in the project's pyproject.toml (or the top level of
planbook.toml), for example ``keep_checkpoints = 50`` and ``keep_plans = 20``.
"""

from __future__ import annotations

import reprlib
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planbook.documents import deep_json
from planbook.documents.nbnode import normalize
from planbook.documents.serializer import JUPYTER, Encoder, detect
from planbook.errors import MetadataError, UsageMistake
from planbook.model.checkpoint import Checkpoint
from planbook.model.store import PlanbookState
from planbook.model.tracked import TrackedList
from planbook.model.words import count

DEFAULT_KEEP_CHECKPOINTS = 50
METADATA_KEY = "planbook"


@dataclass(frozen=True)
class Retention:
    """How much history a notebook keeps (None: all of it)."""

    keep_checkpoints: int | None = DEFAULT_KEEP_CHECKPOINTS
    keep_plans: int | None = None

    def __post_init__(self) -> None:
        # A count under 1 would drop every checkpoint (a negative one sliced from the end);
        # one that is not a whole number (2.5, [1], "3") would fail half-way through the gc.
        for key in ("keep_checkpoints", "keep_plans"):
            value = getattr(self, key)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                # reprlib: one short line, whatever was given
                raise UsageMistake(f"{key}={reprlib.repr(value)}: give a count of 1 or more")

    @classmethod
    def load(cls, root: str | Path) -> Retention:
        """The limits configured in ``root`` (pyproject.toml, then planbook.toml), else defaults."""
        values: dict[str, Any] = {}
        base = Path(root)
        for path, table in ((base / "pyproject.toml", True), (base / "planbook.toml", False)):
            if not path.is_file():
                continue
            try:
                data = tomllib.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
                raise UsageMistake(f"{path.name} cannot be read ({exc}); fix it first") from None
            section = data.get("tool", {}).get("planbook", {}) if table else data
            values.update(
                {k: section[k] for k in ("keep_checkpoints", "keep_plans") if k in section}
            )
        for key, value in values.items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise UsageMistake(
                    f"`{key} = {value!r}` in the planbook settings is not a whole number of at "
                    "least 1; fix it (for example `keep_checkpoints = 50`)"
                )
        return cls(**values)


@dataclass
class GcReport:
    checkpoints: int = 0
    plans: int = 0
    blobs: int = 0

    def __str__(self) -> str:
        return (
            f"dropped {count(self.checkpoints, 'checkpoint')}, {count(self.plans, 'plan')} and "
            f"{count(self.blobs, 'blob')} no longer needed"
        )


def blobs_of(checkpoint: Checkpoint) -> set[str]:
    """Every blob a checkpoint names."""
    keys: set[str] = set()
    for snap in checkpoint.cells:
        if snap.blob:
            keys.add(snap.blob)
        for part in (snap.parts or {}).values():
            if "blob" in part:
                keys.add(part["blob"])
            keys.update(part.get("items", ()))
    keys.update(f.blob for f in checkpoint.files if f.blob)
    return keys


def gc(state: PlanbookState, retention: Retention) -> GcReport:
    """Drop all but the newest checkpoints and closed plans the retention keeps, then every
    blob no remaining checkpoint names. Checkpoints of a running step are always kept."""
    report = GcReport()
    running = {s.checkpoint for p in state.plans for s in p.steps if s.status == "running"}
    if retention.keep_checkpoints is not None:
        by_age = sorted(state.checkpoints, key=lambda c: c.seq)
        old = by_age[: max(0, len(by_age) - retention.keep_checkpoints)]
        drop = {c.id for c in old if c.id not in running}
        state.checkpoints = TrackedList(c for c in state.checkpoints if c.id not in drop)
        report.checkpoints = len(drop)
    if retention.keep_plans is not None:
        closed = [p for p in state.plans if not p.is_open]
        drop_plans = {p.id for p in closed[: max(0, len(closed) - retention.keep_plans)]}
        state.plans = TrackedList(p for p in state.plans if p.id not in drop_plans)
        report.plans = len(drop_plans)
    needed: set[str] = set()
    for cp in state.checkpoints:
        needed |= blobs_of(cp)
    unused = [key for key in state.blobs if key not in needed]
    for key in unused:
        del state.blobs[key]
    report.blobs = len(unused)
    return report


def was_pruned(state: PlanbookState, ref: str) -> bool:
    """Whether ``ref`` names a checkpoint the history still mentions but gc dropped."""
    named = {s.checkpoint for p in state.plans for s in p.steps if s.checkpoint}
    named |= {undone for cp in state.checkpoints for undone in cp.undid}
    kept = {cp.id for cp in state.checkpoints}
    return any(
        (name == ref or name.startswith(ref) or name == f"cp-{ref}") and name not in kept
        for name in named
    )


def strip_text(text: str, where: str = "the notebook") -> str:
    """The notebook without planbook's metadata, in the file's own style; unchanged text when
    there is none (so it works as a git clean filter, run on every ``git add``)."""
    try:
        nb = deep_json.loads(text)  # a part nested too deep is kept as its text
    except ValueError as exc:
        raise MetadataError(
            f"{where} is not a notebook (not JSON: {exc}); nothing was changed"
        ) from None
    if not isinstance(nb, dict) or not isinstance(nb.get("metadata"), dict):
        raise MetadataError(f"{where} is not a notebook (no metadata object); nothing was changed")
    if METADATA_KEY not in nb["metadata"]:
        return text
    found = detect(text, nb)
    encoder = found[1] if found else Encoder(JUPYTER)
    if found is None:
        nb = normalize(nb)
    nb["metadata"] = {k: v for k, v in nb["metadata"].items() if k != METADATA_KEY}
    return encoder.encode(nb)
