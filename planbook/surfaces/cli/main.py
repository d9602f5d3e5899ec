"""``planbook``: review and run a notebook's plan outside Jupyter (a pull request, CI, a terminal).

A thin surface like the magics: it reads the notebook, calls a Session and prints what happened.
This module is the entry point (the console script and ``python -m planbook``): it parses the
command line, runs the subcommand and turns how it ended into one line and an exit code. The
parts: ``parser`` (the arguments), ``commands`` (one ``cmd_*`` per subcommand), ``kernel`` (the
real kernel ``approve`` runs in), ``serve_mcp`` (``planbook mcp``), ``demo``, ``loading``
(reading the notebook), ``paths`` (a path as the person pastes it) and ``exit_codes`` (the one
table the help, docs/cli.md and the README show, and which code an error gets).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from planbook.errors import CliError, spoken_as
from planbook.surfaces.cli.exit_codes import (
    EXIT_CODES,
    EXIT_DEPENDENCY,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_KERNEL,
    EXIT_METADATA,
    EXIT_MISSING,
    EXIT_NOT_NOTEBOOK,
    EXIT_NOTHING,
    EXIT_OK,
    EXIT_PIPE,
    EXIT_UNWRITABLE,
    EXIT_USAGE,
)
from planbook.surfaces.cli.parser import build_parser
from planbook.surfaces.cli.paths import shown
from planbook.surfaces.program import as_a_program
from planbook.surfaces.say import say

# The exit codes are part of this entry point's public face (scripts and tests read them here).
__all__ = [
    "EXIT_CODES",
    "EXIT_DEPENDENCY",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_KERNEL",
    "EXIT_METADATA",
    "EXIT_MISSING",
    "EXIT_NOTHING",
    "EXIT_NOT_NOTEBOOK",
    "EXIT_OK",
    "EXIT_PIPE",
    "EXIT_UNWRITABLE",
    "EXIT_USAGE",
    "build_parser",
    "main",
]


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``planbook ARGV``; its exit code. A ``CliError`` is one line on stderr and its code;
    Ctrl-C is 130; a reader that stops early (``| head``) is 141, without a traceback.
    Without ``argv`` this process is the ``planbook`` command (the console script, ``python -m
    planbook``): it goes without what it never uses (``surfaces/program.py``)."""
    if argv is None:
        as_a_program()
    try:
        args = build_parser().parse_args(argv)
        notebook = getattr(args, "notebook", None)
        where = shown(Path(notebook)) if notebook and notebook != "-" else None
        # Whatever a step or a check says (a conflict's fix, say) in the command's words.
        with spoken_as("cli", notebook=where):
            code = int(args.run(args))
        sys.stdout.flush()  # a closed pipe shows here, not at exit where it cannot be caught
        return code
    except CliError as exc:
        say(f"planbook: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        say("planbook: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # `planbook show NB | head -2`: the reader has what it wanted. Point stdout at devnull
        # so the interpreter's last flush does not print a traceback either.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_PIPE


def _exit(argv: Sequence[str] | None = None) -> NoReturn:  # pragma: no cover
    sys.exit(main(argv))


if __name__ == "__main__":  # pragma: no cover
    _exit()
