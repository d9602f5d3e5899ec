"""A path as the person at the ``planbook`` command can paste it: relative to the current
folder when inside it, else absolute; quoted for the shell when it needs to be."""

from __future__ import annotations

import shlex
from pathlib import Path


def shown(path: Path, here: Path | None = None) -> str:
    """``path`` as the person can paste it in ``here`` (default: the current folder, which
    a relative ``path`` is taken from too)."""
    full = path.resolve()
    try:
        text = str(full.relative_to((here or Path.cwd()).resolve()))
    except ValueError:
        text = str(full)
    return shlex.quote(text)
