"""Rules files written as the person writes them by hand, then trusted as ``planbook trust``
trusts them: what every test of what a rule does starts from (an untrusted allow rule acts as
ask, tests/attack/test_trusted_rules.py)."""

from __future__ import annotations

from pathlib import Path

from planbook.engine.rules.project import trust_rules_in


def own_rules(path: Path, text: str) -> Path:
    """Write ``text`` to the rules file ``path`` and trust its allow rules and MCP servers,
    as this person."""
    path.write_text(text, encoding="utf-8")
    trust_rules_in(path.parent, (path.name,))
    return path
