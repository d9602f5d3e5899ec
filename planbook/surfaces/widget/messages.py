"""The actions the panel's front end sends, validated before anything is touched.

A discriminated union on ``action``; unknown fields are refused, so a typo in the front end
shows up as a clear error in the panel instead of being silently ignored.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, TypeAdapter

from planbook.errors import BadMessage, read_message
from planbook.model.base import DEFERRED, PlanbookModel


class _Action(PlanbookModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class _OnRevision(_Action):
    revision: int = Field(ge=1, description="The plan revision the person was looking at.")


class _Approving(_OnRevision):
    shown: dict[str, str] = Field(
        description="Step id -> its hash as the panel rendered it (the view's step `hash`): "
        "a step that differs now, or was not shown, is refused and nothing runs."
    )


class Approve(_Approving):
    """Approve these steps (ids, in plan order) and run exactly them."""

    action: Literal["approve"]
    step_ids: tuple[str, ...] = Field(min_length=1)


class ApproveAll(_Approving):
    action: Literal["approve_all"]


class Reject(_OnRevision):
    action: Literal["reject"]


class Skip(_OnRevision):
    action: Literal["skip", "unskip"]
    step_id: str


class Retry(_OnRevision):
    """Retry a failed step: run its code again, or stage its change again for review."""

    action: Literal["retry"]
    step_id: str = Field(min_length=1)


class Preview(_OnRevision):
    """Run a shell step once in an overlay and show what it would change."""

    action: Literal["preview"]
    step_id: str = Field(min_length=1)


class Reorder(_OnRevision):
    """The new order of all the steps of the current revision."""

    action: Literal["reorder"]
    order: tuple[str, ...] = Field(min_length=1)


class Revise(_OnRevision):
    action: Literal["revise"]
    feedback: str = Field(min_length=1, max_length=10_000)


class Stop(_Action):
    """Stop the panel's run between two steps."""

    action: Literal["stop"]


class StopAgent(_Action):
    """Stop the agent's run (the steps it staged are kept)."""

    action: Literal["stop_agent"]


class Rollback(_Action):
    action: Literal["rollback"]
    checkpoint: str = Field(min_length=1)
    force: bool = Field(default=False, description="Overwrite changes made after the steps ran.")
    confirm: bool = Field(
        default=False,
        description="Restore checkpoints recorded elsewhere (a received notebook's), after "
        "the panel listed what they write.",
    )


class ShowRevisionDiff(_Action):
    """Compare two revisions; ``from``/``to`` of None closes the comparison."""

    action: Literal["show_revision_diff"]
    from_: int | None = Field(default=None, alias="from")
    to: int | None = None


class AnswerDecision(_Action):
    """Answer a question the agent is waiting on: an option, or free text where allowed."""

    action: Literal["answer"]
    decision_id: str = Field(min_length=1)
    choice: str = Field(min_length=1, max_length=10_000)
    text: str | None = Field(default=None, max_length=10_000)


class Dismiss(_Action):
    """Clear the error shown in the panel."""

    action: Literal["dismiss"]


Action = Annotated[
    Approve
    | ApproveAll
    | Reject
    | Skip
    | Reorder
    | Retry
    | Preview
    | Revise
    | Stop
    | StopAgent
    | Rollback
    | ShowRevisionDiff
    | AnswerDecision
    | Dismiss,
    Field(discriminator="action"),
]
_ADAPTER: TypeAdapter[Action] = TypeAdapter(Action, config=DEFERRED)


def parse(content: object) -> Action:
    return read_message(
        _ADAPTER,
        content,
        unreadable="the panel sent a message planbook cannot read",
        fix="re-run the cell that shows the panel",
        error=BadMessage,
    )
