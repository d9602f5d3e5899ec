"""What a run reports: each step's outcome, why it stopped, and one-line reasons for faults."""

from __future__ import annotations

from dataclasses import dataclass, field

from planbook.errors import PlanbookError
from planbook.model.words import count, plural


@dataclass
class StepOutcome:
    number: int
    step_id: str
    kind: str
    status: str
    message: str = ""


@dataclass
class RunReport:
    """What a run did, step by step. ``ok`` when every approved step finished."""

    outcomes: list[StepOutcome] = field(default_factory=list)
    stopped: str | None = None
    left_pending: int = 0
    #: What the person should know beyond the steps (a reconciliation, a save not confirmed).
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.stopped is None and all(o.status == "done" for o in self.outcomes)

    def lines(self) -> list[str]:
        out = [
            f"step {o.number} ({o.kind}): {o.status}" + (f": {o.message}" if o.message else "")
            for o in self.outcomes
        ]
        if self.stopped:
            out.append(self.stopped)
        if self.left_pending:
            out.append(
                f"{count(self.left_pending, 'approved step')} {plural('was', self.left_pending)} "
                f"not run and {plural('is', self.left_pending)} pending again"
            )
        return out + self.notes

    def __str__(self) -> str:
        return "\n".join(self.lines()) or "nothing ran"


def one_line(exc: BaseException) -> str:
    """What went wrong, in one line: planbook's own message, or the exception's type and text."""
    if isinstance(exc, PlanbookError):
        text = str(exc)
    else:
        detail = " ".join(str(exc).split())
        text = f"{type(exc).__name__}" + (f": {detail}" if detail else "")
        text += " (not a planbook refusal: a system fault or a planbook bug)"
    text = " ".join(text.split())
    return text if len(text) <= 400 else text[:397] + "..."
