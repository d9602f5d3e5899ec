"""What each exit code of the ``planbook`` command means, and which one a planbook error gets.

``EXIT_CODES`` is the one table the help's epilog, docs/cli.md and the README show
(tests/test_cli.py checks that they say the same). ``code_for`` is also imported in the kernel
``planbook approve`` starts, so it stays light: the error types and nothing else.
"""

from __future__ import annotations

import errno
import re
from pathlib import Path

from planbook.errors import (
    CliError,
    MetadataError,
    NothingToDo,
    PlanbookError,
    RollbackConflict,
    UsageMistake,
)
from planbook.surfaces.cli.paths import shown

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_MISSING = 3
EXIT_NOT_NOTEBOOK = 4
EXIT_NOTHING = 5
EXIT_METADATA = 6
EXIT_KERNEL = 7
EXIT_UNWRITABLE = 8
EXIT_DEPENDENCY = 9
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
    (EXIT_UNWRITABLE, "cannot write: the notebook's folder is read-only (nothing was changed)"),
    (EXIT_DEPENDENCY, "a package the command needs is not installed (the message names the extra)"),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C): the run ended between steps"),
    (EXIT_PIPE, "the output was cut short: its reader stopped early (as `head` does)"),
)


def exit_codes_text() -> str:
    """The table as the help's epilog shows it."""
    return "exit codes:\n" + "".join(f"  {code:<4} {text}\n" for code, text in EXIT_CODES)


#: An OS refusal to write: a read-only mount, or a folder or file the user may not write.
_READ_ONLY = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})
#: The temporary file an atomic write makes beside its target: ``.<name>.<random>.tmp``.
_ATOMIC_TEMP = re.compile(r"^\.(?P<name>.+)\.[^.]+\.tmp$")


def unwritable(exc: BaseException) -> Path | None:
    """The path the OS refused to write, when that is what ended ``exc`` (raised by it or by
    what it wraps); for an atomic write's temporary file, the file it was to replace."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in _READ_ONLY and seen.filename:
            path = Path(str(seen.filename))
            temp = _ATOMIC_TEMP.match(path.name)
            return path.with_name(temp["name"]) if temp else path
        seen = seen.__cause__ or seen.__context__
    return None


def cannot_write(path: str) -> CliError:
    """The one line for a write the OS refused (the folder is read-only, or not the user's)."""
    return CliError(EXIT_UNWRITABLE, f"cannot write {path}: read-only folder; nothing was changed")


def as_cli_error(exc: PlanbookError, notebook: Path, here: Path | None = None) -> CliError:
    """A Session call's error on ``notebook`` as the command says it: one line in its words
    (fixes as ``planbook`` commands on the notebook as the person can paste it in ``here``,
    the folder they run the command in) and its exit code. A path the OS refused is taken
    from the notebook's folder (the workspace)."""
    if isinstance(exc, CliError):
        return exc
    refused = unwritable(exc)
    if refused is not None:
        return cannot_write(shown(notebook.parent / refused, here))
    return CliError(code_for(exc), exc.said_to("cli", notebook=shown(notebook, here)))


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
