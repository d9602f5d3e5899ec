"""The ``planbook`` command as a person runs it: ``python -m planbook`` in a subprocess (the
console script may be stale after module moves)."""

from __future__ import annotations

import subprocess
import sys


def run_planbook(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``planbook ARGV``: its exit code, stdout and stderr as text."""
    return subprocess.run(
        [sys.executable, "-m", "planbook", *argv], capture_output=True, text=True, timeout=timeout
    )
