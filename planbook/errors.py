"""One exception type per failure a person can act on.

Every message says what happened and what to do next, in one line, so the magics can show it
without a traceback and the panel can show it as it is.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, ClassVar, Literal, TypeVar

if TYPE_CHECKING:
    from pydantic import TypeAdapter, ValidationError

_T = TypeVar("_T")

#: Where the person is talking to planbook: the magics in a notebook, Python (a script, or
#: ``pb.*`` calls), or the ``planbook`` command.
Surface = Literal["magics", "api", "cli"]

#: The surface whose words ``str(error)`` uses: Python until the magics are loaded in this
#: process (then the person is in a notebook, where the magics are the shortest fix to type).
_spoken: list[Surface] = ["api"]
#: The notebook as the person can paste it where they are (the CLI knows it), for ``{nb}``.
_spoken_notebook: list[str | None] = [None]

#: Messages name their fix as a magic; the same fix on the other surfaces. ``{nb}`` is the
#: notebook as the person can paste it (the CLI knows it). A magic not listed stays as it is.
_FIXES: dict[str, dict[str, str]] = {
    "%plan": {"api": "print(pb.render_text())", "cli": "planbook show {nb}"},
    "%plan cells": {"api": "pb.cells()", "cli": "%plan cells"},
    "%%propose": {"api": "pb.propose", "cli": "%%propose"},
    "%checkpoints": {"api": "print(pb.checkpoints_text())", "cli": "planbook show {nb}"},
    "%approve": {"api": "pb.approve()", "cli": "planbook approve {nb}"},
    "%reject": {"api": "pb.reject()", "cli": "planbook reject {nb}"},
    "%rollback": {"api": "pb.rollback()", "cli": "planbook rollback {nb}"},
    "%rollback --force": {
        "api": "pb.rollback(force=True)",
        "cli": "planbook rollback {nb} --force",
    },
    "%plan revise": {"api": "pb.revise(...)", "cli": "%plan revise"},
    # not a magic: an option the magics and the command share, a keyword in Python
    "--first N": {"api": "first=N", "cli": "--first N"},
    "%%propose --run": {"api": "run=True", "cli": "%%propose --run"},
    "%propose --run-cell CELL": {
        "api": "pb.propose.run_cell(CELL)",
        "cli": "%propose --run-cell CELL",
    },
    "%plan reset --force": {"api": "pb.reset(force=True)", "cli": "%plan reset --force"},
}
#: Fixes with an argument: the magic's pattern and the API call it becomes.
_FIX_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r'%plan revise (".*")'), r"pb.revise(\1)"),
    (re.compile(r"%%propose --after (.+)"), r"pb.propose.insert_cell(source, after=\1)"),
    (re.compile(r"%rollback (\S+)"), r'pb.rollback("\1")'),
    (re.compile(r"%reject (\d+)"), r"pb.reject(\1)"),
]
_BACKTICKED = re.compile(r"`((?:%%?|--)[^`]+)`")


def speak_as(surface: Surface, *, notebook: str | None = None) -> None:
    """From now on ``str(error)`` in this process names fixes for ``surface`` (on
    ``notebook``, as the person can paste it, where a fix names one)."""
    _spoken[0] = surface
    _spoken_notebook[0] = notebook


@contextmanager
def spoken_as(surface: Surface, *, notebook: str | None = None) -> Iterator[None]:
    """``speak_as`` for the duration of a block, then back to what was spoken before."""
    before = _spoken[0], _spoken_notebook[0]
    speak_as(surface, notebook=notebook)
    try:
        yield
    finally:
        _spoken[0], _spoken_notebook[0] = before


def speak(message: str, surface: Surface, *, notebook: str | None = None) -> str:
    """``message`` (fixes named as magics) with each fix as ``surface`` says it."""
    if surface == "magics":
        return message

    def fix(match: re.Match[str]) -> str:
        magic = match.group(1)
        if magic in _FIXES:
            return "`" + _FIXES[magic][surface].replace("{nb}", notebook or "NB") + "`"
        if surface == "api":
            for pattern, call in _FIX_PATTERNS:
                if pattern.fullmatch(magic):
                    return "`" + pattern.sub(call, magic) + "`"
        return match.group(0)

    return _BACKTICKED.sub(fix, message)


def first_problem(exc: ValidationError, *, whole: str) -> tuple[str, str]:
    """Where the first validation problem is (a dotted path, or ``whole`` when it is the value
    itself) and what it is: enough for a one-line message, the rest is noise to a person."""
    first = exc.errors()[0]
    return ".".join(str(p) for p in first["loc"]) or whole, first["msg"]


@contextmanager
def invalid_as(
    error: Callable[[str, str], Exception],
    *,
    whole: str,
    explain: Callable[[ValidationError], str] | None = None,
) -> Iterator[None]:
    """Inside, pydantic's ``ValidationError`` becomes ``error(where, problem)``, raised without
    pydantic's report: ``where`` and ``problem`` are its first problem (``first_problem``), or
    ``explain``'s words for the problem where a caller knows better ones."""
    # heavy: pydantic (errors.py is imported by `%load_ext planbook`, which must stay light)
    from pydantic import ValidationError

    try:
        yield
    except ValidationError as exc:
        where, problem = first_problem(exc, whole=whole)
        raise error(where, explain(exc) if explain else problem) from None


def read_message(
    adapter: TypeAdapter[_T],
    content: object,
    *,
    unreadable: str,
    fix: str,
    error: Callable[[str], Exception],
) -> _T:
    """``content`` as ``adapter`` reads it; else ``error`` with one line: what could not be
    read, where and why, that nothing changed, and ``fix`` (a front end's message, say)."""
    with invalid_as(
        lambda where, problem: error(
            f"{unreadable} ({where}: {problem}); nothing was changed: {fix}"
        ),
        whole="message",
    ):
        return adapter.validate_python(content)


class PlanbookError(Exception):
    """Base class: something the person can fix; the notebook, files and plan are unchanged.

    The message is written with magics as fixes (``see `%plan```); ``str()`` says them the way
    the surface in use does (``speak_as``), ``said_to`` for a given one.
    """

    def __str__(self) -> str:
        return self.said_to(_spoken[0], notebook=_spoken_notebook[0])

    def said_to(self, surface: Surface, *, notebook: str | None = None) -> str:
        return speak(super().__str__(), surface, notebook=notebook)


class UsageMistake(PlanbookError):
    """The request itself is wrong (bad step number, unknown option, empty plan)."""


class NothingToDo(UsageMistake):
    """Nothing to act on: no plan, no pending step, no step left to roll back."""


class UnknownStep(UsageMistake):
    def __init__(self, number: int, count: int) -> None:
        where = f"steps are numbered 1 to {count}" if count else "the plan has no steps yet"
        super().__init__(f"there is no step {number}: {where}; see them with `%plan`")
        self.number = number


class UnknownCheckpoint(UsageMistake):
    def __init__(self, checkpoint: str) -> None:
        super().__init__(f"no checkpoint {checkpoint!r}: list them with `%checkpoints`")


class UnknownDecision(UsageMistake):
    def __init__(self, decision_id: str, open_ids: list[str]) -> None:
        where = ", ".join(open_ids) if open_ids else "none is open"
        super().__init__(
            f"no open decision {decision_id!r} ({where}); see them with `%answer` "
            "or `session.decisions.pending()`"
        )


class BadMessage(UsageMistake):
    """A message from the review panel that does not fit any action."""


class UnknownCell(PlanbookError):
    """No cell by that id; subclasses say why in their own words (``message``)."""

    def __init__(self, cell_id: str, message: str = "") -> None:
        super().__init__(
            message or f"no cell with id {cell_id!r} in this notebook: list ids with `%plan cells`"
        )
        self.cell_id = cell_id


class CellNotSaved(UnknownCell):
    """A cell the open page has and the saved file does not (yet): planbook reads the file
    when no collaboration and no extension bring it the page (planbook/sessions/page_advice.py)."""

    def __init__(self, cell_id: str) -> None:
        super().__init__(
            cell_id,
            f"cell {cell_id!r} is not in the saved file yet: save the notebook (Ctrl+S) and "
            "try again (`%plan cells` lists the saved cells)",
        )


class UnknownCellName(UnknownCell):
    """No cell goes by that name: an UnknownCell whose message lists every way to name one."""

    def __init__(self, token: str) -> None:
        super().__init__(
            token,
            f"no cell with id {token!r}, nor one whose id starts with it, tagged with it or at "
            "that position: list the cells with `%plan cells` (position #N, id, first line)",
        )


class OutsideWorkspace(PlanbookError):
    """A path that resolves outside the workspace root (`..`, absolute, or a symlink)."""

    def __init__(self, path: str, root: str) -> None:
        super().__init__(
            f"refused: {path!r} is outside the workspace {root!r}; "
            "use a path inside it (symlinks that leave it are refused too)"
        )


class UnreadableFile(PlanbookError):
    """Binary or oversized files are refused rather than mangled."""


class ConflictError(PlanbookError):
    """The target changed after the step was staged; nothing was applied."""


class TargetDrifted(ConflictError):
    """A step's target or anchor is not as it was when the step was staged: the step has to be
    made again, and how depends on where the person is (the command cannot revise a plan)."""

    #: What the person can do, in each surface's words (``{nb}``: the notebook).
    FIXES: ClassVar[dict[Surface, str]] = {
        "magics": 'revise the plan (`%plan revise "..."`) or reject this step and propose it again',
        "api": "revise the plan (`pb.revise(...)`) or reject this step and propose it again",
        "cli": "reject this step (`planbook reject {nb} --steps N`) and propose it again, or "
        "revise it in Jupyter (`%plan revise`) and approve it then",
    }

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what

    def said_to(self, surface: Surface, *, notebook: str | None = None) -> str:
        fix = self.FIXES[surface].replace("{nb}", notebook or "NB")
        return f"{self.what}; nothing was applied: {fix}"


class ApprovalMismatch(PlanbookError):
    """The plan changed after approval, or after it was shown to the person who approves:
    nothing runs."""


class NeedsConfirmation(PlanbookError):
    """What is asked for rests on records made elsewhere (a received notebook's checkpoint):
    the message says what it would write; nothing was changed until the person confirms."""


class PlanStateError(PlanbookError):
    """An event that the plan's state machine does not allow in its current state."""


class MetadataError(PlanbookError):
    """The planbook metadata in the notebook cannot be read; it is left untouched."""


class TransactionFailed(PlanbookError):
    """Something outside planbook's own checks failed (disk, memory, a bug) during a change;
    the saved notebook, files and plan are as they were before it."""


class LiveConnectionError(TransactionFailed):
    """The collaboration room cannot be reached (or stopped answering); the message says
    whether the change was applied (when that is unknown, ``applied`` is None and the record
    is reconciled with the room once it is back)."""

    #: The change can be tried again as it is once the room is back (nothing about the change
    #: itself is wrong): the executor leaves such a step pending instead of failed.
    retryable = True
    #: False: certainly not applied; None: unknown until the room is back (then reconciled).
    applied: bool | None = None

    @classmethod
    def nothing_applied(cls, message: str) -> LiveConnectionError:
        error = cls(message)
        error.applied = False
        return error


class NotDurable(PlanbookError):
    """The server did not confirm saving a step's "running" record (or a file step's
    checkpoint), so its code was not run or its file not written (a stop could otherwise run
    it twice, or leave a change nothing records); approve the step again when the room is
    back."""

    retryable = True


class StepFailed(PlanbookError):
    """A step ran and failed; later steps stay pending."""


class RollbackConflict(PlanbookError):
    """A target changed after its step ran; rolling back would overwrite that change."""


class NotInKernel(PlanbookError):
    """Running a cell needs an IPython kernel; there is none here."""


class KernelUnreachable(PlanbookError):
    """A notebook's kernel cannot be asked (none is attached, or it did not answer in time):
    nothing ran in it."""


class CliError(PlanbookError):
    """A one-line message for the person at the ``planbook`` command and the exit code that goes
    with it (planbook/surfaces/cli/exit_codes.py). The message is written in the command's own
    words already (fixes as ``planbook ...`` commands), so every surface shows it as it is."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code

    def said_to(self, surface: Surface, *, notebook: str | None = None) -> str:
        return Exception.__str__(self)


class LayerRefused(PlanbookError):
    """A shell command's overlay layer holds what planbook will not apply (a FIFO, a device, a
    symlink out of the workspace, a hard link to outside, a protected setting, too many
    entries or bytes): nothing of it was applied."""


class PolicyDenied(PlanbookError):
    """A permission rule forbids this change."""


class RulesError(PlanbookError):
    """A rule file cannot be read; the message names the file, the rule and the fix."""


class UnsureCommand(PlanbookError):
    """The shell classifier cannot be sure a command is read-only; the message (why not)
    becomes the verdict's reason, and the command counts as a write. Never reaches a person
    as an error: engine/rules/classifier.py turns it into a verdict."""


class NoModelConfigured(PlanbookError):
    """No model, or no key for it: the agent cannot run, everything else can."""


class RunStopped(PlanbookError):
    """Not a failure: the person chose to stop the agent's run at a decision point; the run
    ends and the plan staged so far is kept."""


class McpServerError(PlanbookError):
    """An MCP server of planbook.toml's ``[mcp.servers]`` cannot be used: its entry is wrong, it
    did not start or answer, or it refused a call. The message names the server."""
