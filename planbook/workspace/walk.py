"""The files of a workspace folder, as read tools list and search them: sorted, inside the root
(a symlink that leads out is left out), without the folders nobody means (caches, ``.git``)."""

from __future__ import annotations

import os
from pathlib import Path

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
