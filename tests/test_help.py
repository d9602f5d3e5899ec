"""`%plan?` and `planbook --help` name every subcommand there is."""

from __future__ import annotations

import re

from planbook.surfaces.magics import PLAN_SUBCOMMANDS, PlanbookMagics


def test_plan_help_lists_every_subcommand() -> None:
    doc = PlanbookMagics.plan.__doc__ or ""
    missing = [cmd for cmd in PLAN_SUBCOMMANDS if not re.search(rf"(%plan |\| ){cmd}\b", doc)]
    assert missing == [], f"`%plan?` does not mention: {missing}"
