"""What running one shell command gave: its output, its exit, and what the guards did.

Its own module so the runner (files.py) and the sandbox that starts the process (sandbox.py)
can both name it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ShellResult:
    command: str
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    seconds: float
    #: Protected settings the command changed and that were put back (one line each).
    guarded: tuple[str, ...] = ()
    #: Paths the command could not write (no one reviewed it: settings_guard.py).
    read_only: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and not self.guarded
