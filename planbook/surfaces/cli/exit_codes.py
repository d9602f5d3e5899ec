"""What each exit code of the ``planbook`` command means, and which one a planbook error gets.

``EXIT_CODES`` is the one table the help's epilog, docs/cli.md and the README show
(tests/test_cli.py checks that they say the same). ``code_for`` is also imported in the kernel
``planbook approve`` starts, so it stays light: the error types and nothing else.
"""

from __future__ import annotations

from planbook.errors import CliError, MetadataError, NothingToDo, RollbackConflict, UsageMistake

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_MISSING = 3
EXIT_NOT_NOTEBOOK = 4
EXIT_NOTHING = 5
EXIT_METADATA = 6
EXIT_KERNEL = 7
EXIT_INTERRUPTED = 130
EXIT_PIPE = 141

#: Every exit code and what it means: the help's epilog, and the table in docs/cli.md and the
#: README (tests/test_cli.py checks that they say the same).
EXIT_CODES: tuple[tuple[int, str], ...] = (
    (EXIT_OK, "done: every step asked for ran"),
    (EXIT_FAILED, "a step failed or conflicted, or a rollback would overwrite a later change"),
    (EXIT_USAGE, "bad arguments: unknown option, bad step range, unknown checkpoint"),
    (EXIT_MISSING, "the notebook file does not exist"),
    (EXIT_NOT_NOTEBOOK, "the file is not a Jupyter notebook"),
    (EXIT_NOTHING, "nothing to do: no plan, no pending step, or nothing left to roll back"),
    (EXIT_METADATA, "the planbook metadata is corrupted or from a newer planbook (left untouched)"),
    (EXIT_KERNEL, "the kernel could not start, died, or a re-run cell timed out"),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C): the run ended between steps"),
    (EXIT_PIPE, "the output was cut short: its reader stopped early (as `head` does)"),
)


def exit_codes_text() -> str:
    """The table as the help's epilog shows it."""
    return "exit codes:\n" + "".join(f"  {code:<4} {text}\n" for code, text in EXIT_CODES)


def code_for(exc: Exception) -> int:
    """The exit code for a planbook error (also called in the kernel ``approve`` starts)."""
    if isinstance(exc, CliError):
        return exc.code
    if isinstance(exc, MetadataError):
        return EXIT_METADATA
    if isinstance(exc, NothingToDo):
        return EXIT_NOTHING
    if isinstance(exc, RollbackConflict):
        return EXIT_FAILED
    if isinstance(exc, UsageMistake):
        return EXIT_USAGE
    return EXIT_FAILED
