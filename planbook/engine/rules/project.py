"""The permission rules of one project, as its files say now: what the Session owns and asks.

One object per Session, tied to the workspace root (and the notebook, which is protected): it
reads ``pyproject.toml``'s ``[tool.planbook]`` and ``planbook.toml`` (matching.py), reads them
again when a look at them (``stat``, documents/file_stat.py) says they may have changed and
reloads them when their bytes did, and answers a verdict for each staged operation. Every surface
goes through it (magics, the Python API, the agent), so they all see the same rules.

Rules the person added in this session ("always allow" without saving) outlive a reload. A
rules file that cannot be read fails closed: every change is asked about (so staged, in every
mode) until the file is fixed, and ``refresh`` says so in one line the Session shows.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from planbook.documents.file_stat import Look, look
from planbook.engine.mcp_servers import trust_servers
from planbook.engine.rules.matching import RuleSet, trust_file
from planbook.engine.rules.protected import Protected
from planbook.engine.rules.rule import RULES_FILE, Action
from planbook.engine.rules.runs_later import extra_patterns
from planbook.engine.rules.runs_later import reason as runs_later_reason
from planbook.errors import RulesError
from planbook.model.operations import AnyOperation
from planbook.model.words import count

__all__ = ["ProjectRules"]

#: The files rules are read from, in the root (the order does not matter for change detection).
_SOURCES = ("pyproject.toml", RULES_FILE)


class ProjectRules:
    """The rules of the project at ``root``, reloaded when its rule files change."""

    def __init__(self, root: Path, notebook: Path | None = None) -> None:
        self.root = root
        self.notebook = notebook
        self._rules = RuleSet(root=root, protected=Protected(root, notebook))
        #: Why the files cannot be read (one line), or None when they can.
        self._broken: str | None = None
        #: The files' bytes when last read; None: not read yet.
        self._seen: tuple[bytes | None, ...] | None = None
        #: One look at each file (stat) when they were last read: files that no look says
        #: changed are not read again (every staged step asks, twice; a read of both files is
        #: four system calls each, a look one).
        self._looks: tuple[_Look, ...] | None = None
        self._paths = tuple(str(root / name) for name in _SOURCES)  # made once: pathlib is slow

    def __repr__(self) -> str:
        state = f"broken: {self._broken}" if self._broken else f"{len(self._rules.rules)} rules"
        return f"ProjectRules({str(self.root)!r}, {state})"

    def refresh(self) -> list[str]:
        """Read the files again if they changed; what the person should hear, one line each
        (a broken file, rules that try to allow protected settings and are ignored)."""
        looks = tuple(map(_look, self._paths))
        if not (self._seen is not None and _unchanged(looks, self._looks)):
            now = tuple(_read(self.root / name) for name in _SOURCES)
            self._looks = looks  # taken before the read: a change after it is seen next time
            if now != self._seen:
                self._seen = now
                self._reload()
        if self._broken is not None:
            return [f"{self._broken}; until it is fixed, every change is staged for review"]
        return self._rules.ignored()

    def current(self) -> RuleSet:
        """The rules as the files say now (session rules included), to list, match or add to;
        `RulesError` (one line) while a file cannot be read."""
        self.refresh()
        if self._broken is not None:
            raise RulesError(self._broken)
        return self._rules

    def verdict(self, op: AnyOperation) -> Action | Literal["hold"] | None:
        """What the rules say about ``op`` as last read (``refresh`` reads the files again):
        allow, ask, deny, or None when no rule speaks and the mode decides; "hold" for a write
        that runs code later (runs_later.py), which no allow rule applies unreviewed. While a
        file cannot be read, everything is asked about."""
        if self._seen is None:
            self.refresh()
        if self._broken is not None:
            return "ask"
        verdict = self._rules.decide_op(op)
        if verdict in ("deny", "ask"):
            return verdict
        if runs_later_reason(op, self.root):
            return "hold"
        return verdict

    def trust_files(self) -> list[str]:
        """Trust the allow rules the project's rules files hold now, as this person (what
        ``%plan trust`` and ``planbook trust`` do): one line per file that had any."""
        lines = trust_rules_in(self.root)
        self._seen = None  # the same bytes, now trusted: read again
        return lines

    def protected_reason(self, op: AnyOperation) -> str | None:
        """Why ``op`` touches settings no rule may let through unreviewed (planbook's rules,
        pyproject.toml, .git, the notebook file), or None; the same whatever the files say."""
        return self._rules.protected_reason(op)

    def _reload(self) -> None:
        try:
            fresh = RuleSet.load(self.root)
            extra_patterns(self.root)  # a bad `runs_later` breaks the rules too: fail closed
        except RulesError as exc:
            self._broken = str(exc)
            return  # the last good rules stay, for the session rules they hold
        fresh.protected = Protected(self.root, self.notebook)
        fresh.rules.extend(r for r in self._rules.rules if r.source == "added")
        self._rules = fresh
        self._broken = None


def trust_rules_in(folder: Path, names: tuple[str, ...] = _SOURCES) -> list[str]:
    """Trust the allow rules of the rules files ``names`` in ``folder``; one line per file
    that holds any (`RulesError`, one line, for a file that cannot be read)."""
    out = []
    for name in names:
        path = folder / name
        if path.is_file():
            fresh = trust_file(path)
            if fresh:
                listed = ", ".join(f"{r.tool} {r.pattern!r}" for r in fresh)
                out.append(f"trusted {count(fresh, 'allow rule')} of {name}: {listed}")
            servers = trust_servers(path) if name == RULES_FILE else []
            if servers:
                listed = ", ".join(servers)
                out.append(f"trusted {count(servers, 'MCP server')} of {name}: {listed}")
    return out


#: A look at a rules file: "absent" when there is none, "unknown" when stat failed otherwise.
_Look = Look | Literal["absent", "unknown"]


def _look(path: str) -> _Look:
    try:
        return look(os.stat(path))
    except FileNotFoundError:
        return "absent"
    except OSError:
        return "unknown"  # read every time: the read says what is wrong


def _unchanged(now: tuple[_Look, ...], before: tuple[_Look, ...] | None) -> bool:
    """No file changed between the looks ``before`` and ``now``, as far as stat can tell for
    certain (file_stat.py: a look in the tick of a change is not certain, nor is "unknown")."""
    if before is None:
        return False
    for seen, earlier in zip(now, before, strict=True):
        if seen == "absent" and earlier == "absent":
            continue
        if not (
            isinstance(seen, Look)
            and seen.unchanged_since(earlier if isinstance(earlier, Look) else None)
        ):
            return False
    return True


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:  # a change to or from unreadable reloads, and the reload says why
        return f"unreadable: {exc.strerror}".encode()
