"""Doom-loop detection: the third identical tool call is not executed.

An agent that repeats the very same call (same tool, same arguments) is stuck: in plan mode the
world does not change between the calls, so the answer will not either. The guard counts calls
by a canonical key over a sliding window of recent calls; the call that reaches ``limit`` is
refused, the agent is told to change course, and the person may let it go on (``forgive``).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DoomLoop", "DoomLoopGuard", "call_key"]


def call_key(tool: str, args: Mapping[str, Any] | str | None) -> str:
    """Same tool and same arguments (whatever their order or spacing) give the same key."""
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError:
            return f"{tool}:{args}"
    canon = json.dumps(args or {}, sort_keys=True, separators=(",", ":"), default=str)
    return f"{tool}:{canon}"


@dataclass(frozen=True)
class DoomLoop:
    """A call that was refused because it repeats."""

    tool: str
    count: int

    @property
    def message(self) -> str:
        """What the agent is told instead of the tool's answer."""
        return (
            f"Not executed: this is call number {self.count} of `{self.tool}` with the very same "
            "arguments, and the answer will not change. Change course: use what you already "
            "know, try a different tool or arguments, or call present_plan / ask_user."
        )


@dataclass
class DoomLoopGuard:
    limit: int = 3
    window: int = 12
    _recent: deque[str] = field(default_factory=deque, init=False, repr=False)

    def record(self, tool: str, args: Mapping[str, Any] | str | None) -> DoomLoop | None:
        """Count this call; return a ``DoomLoop`` when it must not run (it is still counted)."""
        key = call_key(tool, args)
        self._recent.append(key)
        while len(self._recent) > self.window:
            self._recent.popleft()
        count = sum(1 for k in self._recent if k == key)
        return DoomLoop(tool=tool, count=count) if count >= self.limit else None

    def forgive(self, tool: str, args: Mapping[str, Any] | str | None) -> None:
        """The person said "continue": forget earlier repeats of this call."""
        key = call_key(tool, args)
        self._recent = deque(k for k in self._recent if k != key)

    def reset(self) -> None:
        self._recent.clear()
