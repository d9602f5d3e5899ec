"""The shape of ``notebook.metadata["planbook"]``: versioned, validated on load."""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from planbook.model.base import PlanbookModel
from planbook.model.checkpoint import Checkpoint
from planbook.model.conversation import Conversation
from planbook.model.plan import AskFirst, Plan
from planbook.model.questions import MAX_KEPT, PersonQuestion
from planbook.model.tracked import TrackedList, tracked

#: 2: plans, checkpoints and log entries stored by id (see planbook.engine.store); 1 is read too.
SCHEMA_VERSION: Final = 2
Mode = Literal["plan", "ask", "auto-edit", "act"]
MODES: tuple[Mode, ...] = ("plan", "ask", "auto-edit", "act")


class LogEntry(PlanbookModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    at: str
    by: str
    event: str
    detail: str = ""


class NotebookIdentity(PlanbookModel):
    """Which notebook this person's signatures belong to: every signed record names ``id``,
    and ``signature`` binds ``id`` to the file's ``place`` (its absolute path) on this machine.
    A record copied into another notebook, or a notebook copied or moved, carries no authority
    where its identity was not signed (engine/received.py)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(max_length=64)
    place: str = Field(max_length=4096)
    signature: str = Field(max_length=200)


class PlanbookState(PlanbookModel):
    """Everything planbook keeps in a notebook. Blobs are compressed, keyed by their SHA-256."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1, 2] = SCHEMA_VERSION
    mode: Mode = "plan"
    # tracked (model/tracked.py): a save that finds neither list changed looks at neither
    plans: Annotated[list[Plan], AfterValidator(tracked)] = Field(default_factory=TrackedList)
    checkpoints: Annotated[list[Checkpoint], AfterValidator(tracked)] = Field(
        default_factory=TrackedList
    )
    blobs: dict[str, str] = Field(default_factory=dict)
    log: list[LogEntry] = Field(default_factory=list)
    #: The agent's conversation (messages, todos, open questions, activity); absent once the
    #: notebook is stripped for sharing, which simply starts a fresh conversation.
    conversation: Conversation | None = None
    #: This person's signature over the mode (engine/signing.py). A mode other than plan
    #: without it was chosen elsewhere: the notebook opens in plan mode instead.
    mode_signature: str | None = Field(default=None, max_length=200)
    #: The notebook's identity, made when this person first signs a record in it.
    notebook: NotebookIdentity | None = None
    #: Questions MCP clients asked the person (model/questions.py), oldest first.
    questions: list[PersonQuestion] = Field(default_factory=list, max_length=MAX_KEPT)
    #: The identity's id when its signature holds for the place the notebook was opened at,
    #: else None: then no record in it was signed here (engine/received.py ``bind``).
    _bound: str | None = PrivateAttr(default=None)
    #: Where the notebook was opened (its absolute path; "" for one without a file).
    _place: str = PrivateAttr(default="")
    #: Parts of the stored record refused on load but kept (engine/store.py): name -> (its
    #: stored value, written back as it is; why it was refused, in one line).
    _set_aside: dict[str, tuple[Any, str]] = PrivateAttr(default_factory=dict)

    @model_serializer(mode="wrap")
    def _without_absent_signature(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Stored as before the signature, the identity and the questions existed when they
        are absent."""
        dumped: dict[str, Any] = handler(self)
        for name in ("mode_signature", "notebook"):
            if getattr(self, name) is None:
                dumped.pop(name, None)
        if not self.questions:
            dumped.pop("questions", None)
        return dumped

    @field_validator("questions")
    @classmethod
    def _one_question_per_id(cls, questions: list[PersonQuestion]) -> list[PersonQuestion]:
        """An answer names its question by id: two with one id would take each other's."""
        seen: set[str] = set()
        for question in questions:
            if question.id in seen:
                raise ValueError(f"two questions have the id {question.id!r}")
            seen.add(question.id)
        return questions

    @model_validator(mode="after")
    def _questions_onto_steps(self) -> PlanbookState:
        """A notebook saved while a step's question was kept in the agent's conversation:
        each question moves onto its step (``Step.ask_first``), so a run still pauses on it."""
        conversation = self.conversation
        if conversation is None or not conversation.step_questions:
            return self
        steps = {step.id: step for plan in self.plans for step in plan.steps}
        for asked in conversation.step_questions:
            step = steps.get(asked.step_id)
            if step is not None and step.ask_first is None:
                step.ask_first = AskFirst(
                    question=asked.question,
                    options=asked.options,
                    answer=asked.answer,
                    held_back=asked.resume,
                )
        conversation.step_questions = []
        return self
