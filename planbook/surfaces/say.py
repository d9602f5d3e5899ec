"""``say``: ``print`` for what the magics and the CLI write, with control characters in it made
visible (``planbook.present.safe.visible``), so stored text cannot steer the terminal."""

from __future__ import annotations

import sys
from typing import TextIO

from planbook.present.safe import visible

__all__ = ["say"]


def say(*parts: object, file: TextIO | None = None, end: str = "\n") -> None:
    """Print ``parts`` as ``print`` would, each made visible first."""
    print(*(visible(str(part)) for part in parts), file=file or sys.stdout, end=end)
