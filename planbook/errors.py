"""One exception type per failure a person can act on.

Every message says what happened and what to do next, in one line, so the magics can show it
without a traceback and the panel can show it as it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


def first_problem(exc: ValidationError, *, whole: str) -> tuple[str, str]:
    """Where the first validation problem is (a dotted path, or ``whole`` when it is the value
    itself) and what it is: enough for a one-line message, the rest is noise to a person."""
    first = exc.errors()[0]
    return ".".join(str(p) for p in first["loc"]) or whole, first["msg"]


class PlanbookError(Exception):
    """Base class: something the person can fix; the notebook, files and plan are unchanged."""


class UsageMistake(PlanbookError):
    """The request itself is wrong (bad step number, unknown option, empty plan)."""


class UnknownCell(PlanbookError):
    def __init__(self, cell_id: str) -> None:
        super().__init__(
            f"no cell with id {cell_id!r} in this notebook: list ids with `%plan cells` "
            "or `planbook.session().cells()`"
        )
        self.cell_id = cell_id


class UnknownStep(UsageMistake):
    def __init__(self, number: int, count: int) -> None:
        where = f"steps are numbered 1 to {count}" if count else "the plan has no steps yet"
        super().__init__(f"there is no step {number}: {where}; see them with `%plan`")
        self.number = number


class UnknownCheckpoint(UsageMistake):
    def __init__(self, checkpoint: str) -> None:
        super().__init__(f"no checkpoint {checkpoint!r}: list them with `%checkpoints`")


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


class ApprovalMismatch(PlanbookError):
    """The plan changed after approval; the executor refuses to run it."""


class PlanStateError(PlanbookError):
    """An event that the plan's state machine does not allow in its current state."""


class MetadataError(PlanbookError):
    """The planbook metadata in the notebook cannot be read; it is left untouched."""


class TransactionFailed(PlanbookError):
    """Something outside planbook's own checks failed (disk, memory, a bug) during a change;
    the saved notebook, files and plan are as they were before it."""


class StepFailed(PlanbookError):
    """A step ran and failed; later steps stay pending."""


class RollbackConflict(PlanbookError):
    """A target changed after its step ran; rolling back would overwrite that change."""


class NotInKernel(PlanbookError):
    """Running a cell needs an IPython kernel; there is none here."""
