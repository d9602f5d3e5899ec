"""The agent's conversation as it is kept in ``metadata.planbook.conversation``. Pure data.

What a person needs after a kernel restart or on another machine: the messages (compacted,
serialized by pydantic-ai's own ``ModelMessagesTypeAdapter`` into JSON-ready dicts), the todo
list, the questions still open (and answers given since, waiting for ``%plan continue``), and the
activity log. Every list is bounded here, so the notebook never grows without limit.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from planbook.model.base import PlanbookModel

#: Activity lines kept in the notebook (the newest).
ACTIVITY_KEPT = 200

TodoStatus = Literal["pending", "in_progress", "done", "cancelled"]
DecisionKind = Literal["question", "approval", "mode_switch", "doom_loop"]
ConversationStatus = Literal["idle", "running", "finished", "stopped", "failed"]


class Todo(PlanbookModel):
    """One thing the agent means to do."""

    model_config = ConfigDict(extra="forbid")

    content: str = Field(min_length=1, max_length=300, description="What to do, in a few words.")
    status: TodoStatus = Field(
        default="pending", description="pending, in_progress, done, cancelled."
    )
    step_ids: list[str] = Field(
        default_factory=list,
        description="Ids of the steps that carry this todo out (from the write tools' answers).",
    )


class SavedDecision(PlanbookModel):
    """A question the agent asked and the person has not answered yet (or answered since the
    run ended: ``answer`` is then set and the next ``%plan continue`` uses it)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    kind: DecisionKind
    question: str
    options: list[str]
    allow_text: bool = False
    #: The tool call that asked, so a resumed run finds its answer.
    call_id: str | None = None
    answer: str | None = None
    answer_text: str | None = None
    answer_args: dict[str, Any] | None = None
    #: This person's signature over the answer (engine/signing.py): an answer recorded
    #: elsewhere (unsigned or foreign) is asked again, never acted on.
    signature: str | None = Field(default=None, max_length=200)

    @model_serializer(mode="wrap")
    def _without_absent_signature(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Stored as before the signature existed when it is absent."""
        dumped: dict[str, Any] = handler(self)
        if self.signature is None:
            dumped.pop("signature", None)
        return dumped


class StepQuestion(PlanbookModel):
    """A step's question as notebooks saved it before it lived on the step (``Step.ask_first``):
    read only, moved onto its step when the notebook loads (model/store.py)."""

    model_config = ConfigDict(extra="forbid")

    step_id: str
    question: str
    options: list[str]
    answer: str | None = None
    #: The approved steps the pause sent back to pending: answering runs them.
    resume: list[str] = Field(default_factory=list)


class ActivityLine(PlanbookModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    at: str
    type: str
    message: str


class Conversation(PlanbookModel):
    """The agent's side of a notebook: one conversation, the latest task's."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    plan_id: str | None = None
    task: str = ""
    #: ``running`` found on load means the kernel died (or was restarted) mid-run.
    status: ConversationStatus = "idle"
    #: The prompt of the latest run, re-sent by ``%plan continue`` if no reply ever came.
    prompt: str = ""
    #: ``ModelMessagesTypeAdapter.dump_python(mode="json")``: compacted to a size bound.
    messages: list[dict[str, Any]] = Field(default_factory=list)
    #: Messages dropped by compaction (the summary or prune note stands in for them).
    dropped: int = 0
    todos: list[Todo] = Field(default_factory=list)
    decisions: list[SavedDecision] = Field(default_factory=list)
    #: Always empty once loaded: older notebooks' step questions, moved onto their steps.
    step_questions: list[StepQuestion] = Field(default_factory=list)
    activity: list[ActivityLine] = Field(default_factory=list)

    def open_decisions(self) -> list[SavedDecision]:
        return [d for d in self.decisions if d.answer is None]

    def add_activity(self, line: ActivityLine) -> None:
        self.activity.append(line)
        del self.activity[:-ACTIVITY_KEPT]
