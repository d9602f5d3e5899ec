"""Rules files written as the person writes them by hand, then trusted as ``planbook trust``
trusts them: what every test of what a rule does starts from (an untrusted allow rule acts as
ask, tests/attack/test_trusted_rules.py)."""

from __future__ import annotations

from pathlib import Path

from planbook.engine.rules.matching import trust_file


def own_rules(path: Path, text: str) -> Path:
    """Write ``text`` to the rules file ``path`` and trust its allow rules, as this person."""
    path.write_text(text, encoding="utf-8")
    trust_file(path)
    return path
