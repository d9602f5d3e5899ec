"""The files of a workspace folder, as read tools list and search them: sorted, inside the root
(a symlink that leads out is left out), without the folders nobody means (caches, ``.git``)."""

from __future__ import annotations

import os
from pathlib import Path

from planbook.workspace.files import Workspace

#: Folders a walk does not enter: tool caches, environments and version control.
SKIP_DIRS = frozenset(
    {
        ".git",
        "node_modules",
        "__pycache__",
        ".ipynb_checkpoints",
        ".venv",
        "venv",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".hypothesis",
    }
)


def walk_files(root: Path, start: Path) -> list[Path]:
    """Files under ``start`` that really live inside ``root`` (symlinks out are left out)."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(start):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            p = Path(dirpath) / name
            try:
                real = p.resolve()
            except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python 3.11)
                continue
            if root in real.parents:
                found.append(p)
    return found


def folder_listing(workspace: Workspace, path: str, limit: int) -> str:
    """The names in a folder of ``workspace`` (folders first, ending with /), at most ``limit``
    of them; the path is confined as every workspace path is."""
    folder = workspace.resolve(path)
    if not folder.is_dir():
        return f"{path!r} is not a folder"
    entries = sorted(folder.iterdir(), key=lambda p: (not p.is_dir(), p.name))
    lines = [p.name + ("/" if p.is_dir() else "") for p in entries[:limit]]
    if len(entries) > limit:
        lines.append(f"[... {len(entries) - limit} more]")
    return "\n".join(lines) or "(empty folder)"
