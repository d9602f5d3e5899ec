"""``planbook trust [FILE]``: the person vouches for a notebook they moved or copied, or for
the allow rules of a rules file they wrote by hand (as ``jupyter trust`` vouches for a
notebook). Without FILE: the rules files of the current folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from planbook.errors import CliError, PlanbookError
from planbook.sessions.open_file import trust_rules_files
from planbook.surfaces.cli.exit_codes import EXIT_MISSING, EXIT_OK, EXIT_USAGE, as_cli_error
from planbook.surfaces.cli.loading import file_session, load, planbook_errors
from planbook.surfaces.cli.paths import shown
from planbook.surfaces.say import say

#: The rules files a project's permission rules are read from.
RULES_FILES = ("planbook.toml", "pyproject.toml")


def cmd_trust(args: argparse.Namespace) -> int:
    target = Path(args.notebook).expanduser() if args.notebook else Path.cwd()
    if target.suffix == ".ipynb":
        loaded = load(str(args.notebook), need_plan=False)
        lines = planbook_errors(loaded, file_session(loaded).trust)
    elif not target.exists():
        raise CliError(EXIT_MISSING, f"{args.notebook}: no such file")
    elif target.is_dir() or target.name in RULES_FILES:
        folder, names = (target, None) if target.is_dir() else (target.parent, (target.name,))
        try:
            lines = trust_rules_files(folder.resolve(), names)
        except PlanbookError as exc:
            raise as_cli_error(exc, target) from None
    else:
        raise CliError(
            EXIT_USAGE,
            f"{args.notebook}: trust a notebook (.ipynb), a planbook.toml or a pyproject.toml",
        )
    for line in lines:
        say(line)
    if not lines:
        say(f"nothing new to trust in {shown(target)}: what it holds is trusted here already")
    return EXIT_OK
