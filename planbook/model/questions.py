"""A question an agent outside the kernel (an MCP client) asks the person, as the notebook keeps
it: what was asked, by whom, and the person's answer with who gave it and their signature.

Stored in ``notebook.metadata["planbook"]["questions"]`` with the plans, so an agent in another
process can wait for the answer and a kernel restart loses nothing. Everything here is bounded,
so a notebook from elsewhere that carries oversized questions is refused in one line.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Final, Literal

from pydantic import ConfigDict, Field

from planbook.model.base import PlanbookModel
from planbook.model.plan import now

#: Characters of a question's text kept.
QUESTION_CHARS: Final = 2_000
#: Characters of one option.
OPTION_CHARS: Final = 200
#: Options one question offers at most.
MAX_OPTIONS: Final = 10
#: Characters of an answer.
ANSWER_CHARS: Final = 4_000
#: Open questions one client may have waiting at once.
MAX_OPEN_PER_CLIENT: Final = 20
#: Open questions a notebook holds at most, whoever asked (a client may name itself anew).
MAX_OPEN: Final = 100
#: Questions a notebook keeps at most (answered ones included); the oldest closed ones go first.
MAX_KEPT: Final = 200

QuestionState = Literal["open", "answered", "withdrawn"]
Option = Annotated[str, Field(min_length=1, max_length=OPTION_CHARS)]


class PersonQuestion(PlanbookModel):
    """One question to the person, from an agent that reached the notebook over MCP."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^q[0-9]{1,6}$", description="Short id used to answer it: `q1`.")
    question: str = Field(min_length=1, max_length=QUESTION_CHARS, description="What is asked.")
    options: list[Option] = Field(
        default_factory=list,
        max_length=MAX_OPTIONS,
        description="Answers offered; the person may also answer in their own words.",
    )
    origin: str = Field(
        max_length=200, description="The asking MCP client's name and version, as it said them."
    )
    asked: datetime = Field(default_factory=now, description="When it was asked.")
    state: QuestionState = "open"
    answer: str | None = Field(
        default=None, max_length=ANSWER_CHARS, description="The person's answer, as given."
    )
    choice: Option | None = Field(
        default=None, description="The option the answer picks, when it picks one."
    )
    answered_by: str | None = Field(
        default=None, max_length=200, description="Who answered (user@host) or withdrew it."
    )
    answered: datetime | None = Field(default=None, description="When it was answered.")
    signature: str | None = Field(
        default=None,
        max_length=200,
        description="This person's signature over the answer (engine/signing.py).",
    )

    @property
    def is_open(self) -> bool:
        return self.state == "open"
