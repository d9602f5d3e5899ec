"""Steps, revisions, approvals and the plan's state machine. Pure data, no I/O.

A revision's steps are fixed once it has an approval: later changes go into a new revision, so
two revisions can always be diffed and an approval always names what it approved.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from planbook.errors import PlanStateError
from planbook.model.base import PlanbookModel
from planbook.model.operations import EditCell, InsertCell, Operation, RunCell
from planbook.model.preview import ShellPreview
from planbook.model.tracked import HOLDERS, Journal, TrackedList, tracked

Risk = Literal["low", "medium", "high"]
StepStatus = Literal[
    "pending",
    "approved",
    "skipped",
    "rejected",
    "running",
    "done",
    "failed",
    "conflict",
    "rolled_back",
]
PlanState = Literal[
    "idle", "drafting", "awaiting_approval", "reviewing", "executing", "completed", "cancelled"
]
PlanEvent = Literal[
    "stage",
    "present",
    "review",
    "approve",
    "finish",
    "pause",
    "reject",
    "request_revision",
    "reopen",
]

#: Steps that still wait for a decision or a run; the rest are settled.
OPEN_STATUSES: frozenset[str] = frozenset({"pending", "approved", "running"})

#: (state, event) -> next state. Anything not listed is refused with the state and event named.
TRANSITIONS: dict[tuple[str, str], str] = {
    ("idle", "stage"): "drafting",
    ("idle", "reject"): "cancelled",
    ("drafting", "stage"): "drafting",
    ("drafting", "present"): "awaiting_approval",
    ("drafting", "review"): "reviewing",
    ("drafting", "approve"): "executing",
    ("drafting", "reject"): "cancelled",
    ("drafting", "request_revision"): "drafting",
    ("drafting", "finish"): "completed",
    ("awaiting_approval", "stage"): "awaiting_approval",
    ("awaiting_approval", "present"): "awaiting_approval",
    ("awaiting_approval", "review"): "reviewing",
    ("awaiting_approval", "approve"): "executing",
    ("awaiting_approval", "reject"): "cancelled",
    ("awaiting_approval", "request_revision"): "drafting",
    ("awaiting_approval", "finish"): "completed",
    ("reviewing", "stage"): "reviewing",
    ("reviewing", "present"): "reviewing",
    ("reviewing", "review"): "reviewing",
    ("reviewing", "approve"): "executing",
    ("reviewing", "reject"): "cancelled",
    ("reviewing", "request_revision"): "drafting",
    ("reviewing", "finish"): "completed",
    ("executing", "pause"): "awaiting_approval",
    ("executing", "finish"): "completed",
    ("completed", "reopen"): "awaiting_approval",
    ("cancelled", "reopen"): "awaiting_approval",
}


def next_state(state: str, event: str) -> PlanState:
    try:
        return TRANSITIONS[(state, event)]  # type: ignore[return-value]
    except KeyError:
        raise PlanStateError(
            f"a plan that is {state.replace('_', ' ')} cannot {event.replace('_', ' ')}; "
            "see its state with `%plan`"
        ) from None


def new_id() -> str:
    return uuid.uuid4().hex[:8]


def now() -> datetime:
    return datetime.now(UTC)


#: The answer every step's question offers: the steps the pause held back stay pending.
STOP_HERE = "stop here"


class AskFirst(PlanbookModel):
    """A question the person answers before the step runs ("ask before this step").

    An approved run that reaches the step while the question is unanswered pauses there: the
    step and the approved ones after it go back to pending (``held_back`` names them), and an
    answer other than ``STOP_HERE`` approves and runs them again. Not part of the approval hash
    (engine/approval.py): like a step's status, it says when the step runs, not what it does.
    """

    # frozen: a change is a new question assigned to the step, which a save sees (a step's
    # dump is kept while its fields hold the same objects: engine/plan_dumps.py); an answer
    # set in place never reached the file
    model_config = ConfigDict(extra="forbid", frozen=True)

    question: str = Field(description="What to ask just before the step runs, one line.")
    options: list[str] = Field(description="The answers offered; the last is always STOP_HERE.")
    answer: str | None = Field(default=None, description="The person's answer, once given.")
    held_back: list[str] = Field(
        default_factory=list,
        description="Ids of the approved steps the pause sent back to pending: answering "
        "runs them.",
    )

    @property
    def waiting(self) -> bool:
        """A run paused on it and it is not answered yet."""
        return self.answer is None and bool(self.held_back)


#: Fields added after notebooks were first written, left out of a step that has none.
_DROPPED_WHEN_ABSENT = ("ask_first", "origin", "runs_later", "preview")


#: The steps' assignments, all steps together (model/tracked.py): a save reuses the dumps of a
#: revision's steps without a look at each when none was assigned to, and during a run looks
#: again at the steps assigned to alone, not at every step of the plan.
ASSIGNMENTS: Journal[Step] = Journal()


class Step(PlanbookModel):
    """One proposed change, with what its target looked like when it was staged."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        ASSIGNMENTS.note(self)

    @classmethod
    def assigned_since(cls, then: int) -> tuple[int, list[Step] | None]:
        """``ASSIGNMENTS.count`` now, and the steps assigned to since it was ``then`` (each
        once), or None when they are no longer all kept."""
        now, window = ASSIGNMENTS.since(then)
        if not window:
            return now, window
        # a step assigned to twice is looked at once (steps do not hash: by identity), in the
        # order they were assigned to
        return now, list({id(s): s for s in reversed(window)}.values())

    id: str = Field(default_factory=new_id)
    operation: Operation
    reason: str = Field(default="", description="Why the change is wanted.")
    risk: Risk = "low"
    base: str = Field(description="Content hash of the target when staged, or 'absent'.")
    depends_on: tuple[str, ...] = Field(default=(), description="Ids of steps this one builds on.")
    status: StepStatus = "pending"
    error: str | None = Field(default=None, description="Why the step failed or conflicted.")
    checkpoint: str | None = Field(default=None, description="Checkpoint written before it ran.")
    run_at_approval: bool = Field(
        default=False, description="For an inserted or edited cell: run it once approved."
    )
    run_by: str | None = Field(
        default=None,
        description="While approved or running: the process that runs it (host:pid:start).",
    )
    ask_first: AskFirst | None = Field(
        default=None,
        description="A question a run pauses on before this step until it is answered.",
    )
    origin: str | None = Field(
        default=None,
        max_length=200,
        description=(
            "Who proposed it when not the person or agent of this notebook's kernel: an MCP "
            "client's name and version as it introduced itself, such as `claude-code 2.1.0`."
        ),
    )
    runs_later: str | None = Field(
        default=None,
        max_length=500,
        description=(
            "Why this file change runs code later without asking (a module that shadows an "
            "installed one, git's settings, a start-up file): auto-edit mode holds it for "
            "review; act mode applies it and this line says so."
        ),
    )

    preview: ShellPreview | None = Field(
        default=None,
        description="For a shell step: what running it once in an overlay changed "
        "(model/preview.py), when it was previewed.",
    )

    @model_serializer(mode="wrap")
    def _without_absent_extras(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A step without a question or an origin is stored as before those fields existed:
        notebooks written earlier keep their bytes, and no step carries ``null`` for them."""
        dumped: dict[str, Any] = handler(self)
        for name in _DROPPED_WHEN_ABSENT:
            if getattr(self, name) is None:
                dumped.pop(name, None)
        return dumped

    @property
    def runs_cell(self) -> bool:
        """Whether executing this step runs a cell's code in the kernel."""
        op = self.operation
        return isinstance(op, RunCell) or (
            self.run_at_approval and isinstance(op, InsertCell | EditCell)
        )


class Revision(PlanbookModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        HOLDERS.note(self)  # a save dumps the plan holding it again (model/tracked.py)

    number: int
    parent: int | None = None
    summary: str = ""
    feedback: str | None = Field(default=None, description="What the person asked to change.")
    steps: Annotated[list[Step], AfterValidator(tracked)] = Field(default_factory=TrackedList)
    created: datetime = Field(default_factory=now)


#: ``Approval.by`` when a permission rule, not the person, let a step run.
APPROVED_BY_RULE = "permission rule"


def approved_by_mode(mode: str) -> str:
    """``Approval.by`` when a mode's policy (act, auto-edit) applied a step as it was staged."""
    return f"policy ({mode} mode)"


def unreviewed(by: str) -> bool:
    """Whether an approval came from a rule or a mode, not from the person reading the step."""
    return by == APPROVED_BY_RULE or (by.startswith("policy (") and by.endswith(" mode)"))


class Approval(PlanbookModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    revision: int
    step_ids: tuple[str, ...]
    sha256: str
    at: datetime = Field(default_factory=now)
    by: str = ""
    person: str | None = Field(
        default=None,
        max_length=300,
        description="Who approved, as user@host (the person at the machine, also when a mode "
        "or rule approved for them).",
    )
    signature: str | None = Field(
        default=None,
        max_length=200,
        description="This person's signature over the approval (engine/signing.py); absent or "
        "foreign: approved elsewhere, so the steps need approving here.",
    )

    @model_serializer(mode="wrap")
    def _without_absent_extras(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Stored as before these fields existed when they are absent."""
        dumped: dict[str, Any] = handler(self)
        for name in ("person", "signature"):
            if getattr(self, name) is None:
                dumped.pop(name, None)
        return dumped


class StepResult(PlanbookModel):
    """One line of the audit trail: what happened when a step ran."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    step_id: str
    status: Literal["done", "failed", "conflict", "refused", "interrupted", "rolled_back"]
    message: str = ""
    checkpoint: str | None = None
    at: datetime = Field(default_factory=now)
    seconds: float = 0.0


class Plan(PlanbookModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        HOLDERS.note(self)  # a save dumps it again (model/tracked.py)

    id: str = Field(default_factory=new_id)
    task: str = ""
    state: PlanState = "idle"
    # tracked lists: a change in place is noted too (an approval or a result appended)
    revisions: Annotated[list[Revision], AfterValidator(tracked)] = Field(
        default_factory=lambda: TrackedList([Revision(number=1)])
    )
    approvals: Annotated[list[Approval], AfterValidator(tracked)] = Field(
        default_factory=TrackedList
    )
    results: Annotated[list[StepResult], AfterValidator(tracked)] = Field(
        default_factory=TrackedList
    )
    created: datetime = Field(default_factory=now)

    @property
    def current(self) -> Revision:
        return self.revisions[-1]

    @property
    def steps(self) -> list[Step]:
        return self.current.steps

    def fire(self, event: PlanEvent) -> PlanState:
        self.state = next_state(self.state, event)
        return self.state

    def revision(self, number: int) -> Revision:
        for rev in self.revisions:
            if rev.number == number:
                return rev
        raise PlanStateError(
            f"there is no revision {number}: this plan has revisions 1 to {len(self.revisions)}"
        )

    def find_step(self, step_id: str) -> Step | None:
        for step in self.steps:
            if step.id == step_id:
                return step
        return None

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for step in self.steps:
            out[step.status] = out.get(step.status, 0) + 1
        return out

    @property
    def is_open(self) -> bool:
        return self.state not in ("completed", "cancelled")


class StepIndex:
    """Where each step of a plan's current revision stands, found in one pass per revision.
    A run looks up every step it takes (to check, number and record it); a scan from the top
    each time would cost in proportion to the step's number, so step 500 of a plan would cost
    more than step 10. A hit is checked against the list itself (same list, same id at that
    place), so a changed or replaced revision is simply indexed again."""

    def __init__(self) -> None:
        self._steps: list[Step] | None = None
        self._at: dict[str, int] = {}

    def find(self, plan: Plan, step_id: str) -> tuple[int, Step] | None:
        """(the step's number from 1, the step) in the plan's current revision, or None."""
        steps = plan.steps
        i = self._at.get(step_id) if steps is self._steps else None
        if i is None or i >= len(steps) or steps[i].id != step_id:
            self._steps, self._at = steps, {}
            for n, step in enumerate(steps):
                self._at.setdefault(step.id, n)  # the first, as ``Plan.find_step`` finds
            i = self._at.get(step_id)
            if i is None:
                return None
        return i + 1, steps[i]

    def number(self, plan: Plan, step: Step) -> int:
        """The number of ``step`` (this very object) in the plan's current revision."""
        found = self.find(plan, step.id)
        if found is not None and found[1] is step:
            return found[0]
        return next(i for i, s in enumerate(plan.steps, 1) if s is step)
