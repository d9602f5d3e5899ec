"""Protected settings stay as they were while a command nobody reviewed runs.

A permission rule (or an auto mode) lets the agent run a shell step without the person seeing
it. The parse of the command already sends anything that names a protected setting to review
(engine/protected.py), but an interpreter can build a name the parse never sees
(``python -c "open('plan'+'book.toml', 'w')"``). So such a command runs with:

- the protected paths that exist bound read-only over themselves by bubblewrap (writes, renames
  and deletes fail with "Read-only file system" / "Device or resource busy"), its own pid
  namespace (nothing it starts outlives it), the rest of the machine as usual (network, home,
  the workspace writable: a rule allowed real work);
- and, after it, a comparison with a snapshot taken before: a protected file it created, or
  changed where no sandbox can start, is put back as it was and the step says so in one line.

``pyproject.toml`` is guarded by its ``[tool.planbook]`` table only: a rule-allowed
``poetry add`` may change the rest of it.
"""

from __future__ import annotations

import contextlib
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from planbook.model.plan import Plan, Step, unreviewed

__all__ = ["SettingsGuard", "guard_for"]

# Defined here, not in engine/protected.py (which uses them): importing that module loads the
# shell parser, and the executor imports this one on every `%load_ext`.
SETTINGS = "planbook.toml"
PYPROJECT = "pyproject.toml"
#: git runs what these hold (hooks, fsmonitor, pagers, filters): never changed unreviewed.
_GIT_SETTINGS = (".git/config", ".git/hooks", ".git/info/attributes")


def _files(path: Path) -> dict[Path, bytes]:
    """Every regular file at or under ``path`` with its bytes (symlinks are not followed)."""
    if path.is_symlink() or path.is_file():
        with contextlib.suppress(OSError):
            return {path: os.readlink(path).encode() if path.is_symlink() else path.read_bytes()}
        return {}
    out: dict[Path, bytes] = {}
    if path.is_dir():
        for sub in sorted(path.rglob("*")):
            if sub.is_symlink():
                out[sub] = os.readlink(sub).encode()
            elif sub.is_file():
                with contextlib.suppress(OSError):
                    out[sub] = sub.read_bytes()
    return out


def _planbook_table(data: bytes | None) -> Any:
    if data is None:
        return None
    try:
        tool = tomllib.loads(data.decode("utf-8")).get("tool")
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return data  # cannot tell what it holds: compare the bytes
    return tool.get("planbook") if isinstance(tool, dict) else None


@dataclass(frozen=True)
class Snapshot:
    files: dict[Path, bytes]


class SettingsGuard:
    """The protected settings of one workspace (and its notebook), for one unreviewed command."""

    def __init__(self, root: Path, notebooks: tuple[Path, ...] = ()) -> None:
        self.root = root
        self.notebooks = notebooks

    @property
    def roots(self) -> tuple[Path, ...]:
        return (self.root / SETTINGS, *(self.root / p for p in _GIT_SETTINGS), *self.notebooks)

    def read_only(self) -> list[Path]:
        """What bubblewrap binds read-only: the protected paths that exist now."""
        return [p for p in self.roots if p.exists() and not p.is_symlink()]

    def snapshot(self) -> Snapshot:
        # Not the notebook: the person's own save may land while the command runs, and putting
        # the file back would lose it (bubblewrap keeps the command from writing it).
        files: dict[Path, bytes] = {}
        for root in (self.root / SETTINGS, *(self.root / p for p in _GIT_SETTINGS)):
            files.update(_files(root))
        files.update(_files(self.root / PYPROJECT))
        return Snapshot(files)

    def restore(self, before: Snapshot) -> list[str]:
        """Put back what the command changed among the protected settings; one line each."""
        now = self.snapshot().files
        lines: list[str] = []
        pyproject = self.root / PYPROJECT
        if _planbook_table(before.files.get(pyproject)) != _planbook_table(now.get(pyproject)):
            self._put_back(pyproject, before.files.get(pyproject))
            lines.append(self._line(pyproject, "its [tool.planbook] rules"))
        for path in sorted(set(before.files) | set(now)):
            if path == pyproject or before.files.get(path) == now.get(path):
                continue
            self._put_back(path, before.files.get(path))
            lines.append(self._line(path, "a protected setting"))
        return lines

    def _put_back(self, path: Path, data: bytes | None) -> None:
        with contextlib.suppress(FileNotFoundError):
            if path.is_dir() and not path.is_symlink():
                return  # a folder that appeared: its files are put back one by one
            path.unlink()
        if data is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)

    def _line(self, path: Path, what: str) -> str:
        name = path.relative_to(self.root).as_posix() if path.is_relative_to(self.root) else path
        return (
            f"the command changed {name} ({what}), which no rule may allow: put back as it was; "
            "stage that change as its own step for review"
        )


class _Confined(Protocol):
    """What a guard needs of a workspace (files.py's Workspace, which runs the command and so
    imports this module): its root and the notebook files it protects."""

    @property
    def root(self) -> Path: ...

    @property
    def protected_paths(self) -> tuple[Path, ...]: ...


def guard_for(plan: Plan, step: Step, workspace: _Confined) -> SettingsGuard | None:
    """A guard when the step runs on a rule's or a mode's word, not the person's."""
    approvals = [a for a in plan.approvals if step.id in a.step_ids]
    if approvals and unreviewed(approvals[-1].by):
        return SettingsGuard(workspace.root, workspace.protected_paths)
    return None
