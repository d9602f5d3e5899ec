"""The questions MCP clients ask the person: asking one, answering it, and telling an answer
this person gave here (signed) from one a notebook carries from elsewhere.

Works on the PlanbookState in memory; the Session saves it (sessions/questions.py). An answer
is signed with this person's key over the question and the answer together, so an answer
written into the metadata by anyone else (or moved onto another question) verifies as
nothing: it is shown as received and never handed to a client as the person's answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planbook.engine import signing
from planbook.engine.received import record_is_local, sign_record
from planbook.errors import UsageMistake
from planbook.model.plan import now
from planbook.model.questions import (
    ANSWER_CHARS,
    MAX_KEPT,
    MAX_OPEN,
    MAX_OPEN_PER_CLIENT,
    MAX_OPTIONS,
    OPTION_CHARS,
    QUESTION_CHARS,
    PersonQuestion,
)
from planbook.model.store import PlanbookState
from planbook.model.words import count

#: The kind every answer's signature is made for (engine/signing.py).
SIGNED_AS = "person_question"


def _next_id(state: PlanbookState) -> str:
    numbers = [int(q.id[1:]) for q in state.questions]
    return f"q{max(numbers, default=0) + 1}"


def _checked(question: str, options: Sequence[str]) -> tuple[str, list[str]]:
    text = question.strip()
    if not text:
        raise UsageMistake("a question needs some text")
    if len(text) > QUESTION_CHARS:
        raise UsageMistake(f"a question has at most {QUESTION_CHARS} characters")
    if len(options) > MAX_OPTIONS:
        raise UsageMistake(f"a question offers at most {MAX_OPTIONS} options")
    kept = [o.strip() for o in options]
    if any(not o or len(o) > OPTION_CHARS for o in kept):
        raise UsageMistake(f"each option has 1 to {OPTION_CHARS} characters")
    if len({o.lower() for o in kept}) != len(kept):
        raise UsageMistake("two options say the same thing: give each once")
    return text, kept


def ask(state: PlanbookState, question: str, options: Sequence[str], origin: str) -> PersonQuestion:
    """Add an open question from ``origin`` to ``state``; refused (one line) when it is too
    long or that client already has ``MAX_OPEN_PER_CLIENT`` questions waiting."""
    text, kept = _checked(question, options)
    waiting = [q for q in state.questions if q.is_open and q.origin == origin]
    if len(waiting) >= MAX_OPEN_PER_CLIENT:
        raise UsageMistake(
            f"{count(waiting, 'question')} from this client already wait for the person: "
            "wait for their answers (wait_for_review) before asking more"
        )
    if sum(q.is_open for q in state.questions) >= MAX_OPEN:
        raise UsageMistake(
            f"{MAX_OPEN} questions already wait for the person in this notebook: "
            "wait for their answers (wait_for_review) before asking more"
        )
    asked = PersonQuestion(id=_next_id(state), question=text, options=kept, origin=origin)
    state.questions.append(asked)
    _forget_oldest(state)
    return asked


def _forget_oldest(state: PlanbookState) -> None:
    """Keep at most MAX_KEPT questions: the oldest closed ones go (an open one never does)."""
    extra = len(state.questions) - MAX_KEPT
    if extra <= 0:
        return
    closed = [q for q in state.questions if not q.is_open][:extra]
    gone = {id(q) for q in closed}
    state.questions = [q for q in state.questions if id(q) not in gone]


def find(state: PlanbookState, question_id: str) -> PersonQuestion:
    for question in state.questions:
        if question.id == question_id:
            return question
    waiting = [q.id for q in state.questions if waits(state, q)]
    where = ", ".join(waiting) if waiting else "none is open"
    raise UsageMistake(f"no question {question_id!r} ({where}); list them with `%answer`")


def pick(question: PersonQuestion, answer: str) -> str | None:
    """The option ``answer`` names (itself in any case, or its 1-based number), or None: the
    answer is the person's own words."""
    text = answer.strip()
    if text.isdigit() and question.options:
        number = int(text)
        if 1 <= number <= len(question.options):
            return question.options[number - 1]
    lowered = {o.lower(): o for o in question.options}
    return lowered.get(text.lower())


def _content(question: PersonQuestion) -> dict[str, Any]:
    return question.model_dump(mode="json", exclude={"signature"})


def answer(state: PlanbookState, question_id: str, text: str) -> PersonQuestion:
    """Record this person's answer to ``question_id``, signed. A question answered here
    already is not answered twice; one whose answer came from elsewhere may be."""
    question = find(state, question_id)
    if question.state == "withdrawn":
        raise UsageMistake(f"question {question_id} was withdrawn: nothing waits for its answer")
    if question.state == "answered" and is_local(state, question):
        raise UsageMistake(f"question {question_id} is answered already ({question.answer!r})")
    given = text.strip()
    if not given:
        raise UsageMistake(f"say something to answer {question_id}: an option or your own words")
    if len(given) > ANSWER_CHARS:
        raise UsageMistake(f"an answer has at most {ANSWER_CHARS} characters")
    choice = pick(question, given)
    question.state = "answered"
    question.choice = choice
    question.answer = choice or given
    question.answered_by = signing.who()
    question.answered = now()
    question.signature = sign_record(state, SIGNED_AS, _content(question))
    return question


def withdraw(state: PlanbookState, question_id: str) -> PersonQuestion:
    """Close an open question without an answer (the person will not answer it)."""
    question = find(state, question_id)
    if not waits(state, question):
        raise UsageMistake(f"question {question_id} is {question.state} already")
    question.state = "withdrawn"
    question.answer = question.choice = None
    question.answered_by = signing.who()
    question.answered = now()
    question.signature = sign_record(state, SIGNED_AS, _content(question))
    return question


def is_local(state: PlanbookState, question: PersonQuestion) -> bool:
    """Whether this person's key signed exactly this question's answer (or withdrawal), in
    the notebook ``state`` holds (engine/received.py: not one copied from another)."""
    return record_is_local(state, SIGNED_AS, _content(question), question.signature)


def waits(state: PlanbookState, question: PersonQuestion) -> bool:
    """Open, or closed by a record this person did not sign (received: no authority)."""
    return question.is_open or not is_local(state, question)


def waiting(state: PlanbookState) -> list[PersonQuestion]:
    """The questions that wait for this person's answer, oldest first."""
    return [q for q in state.questions if waits(state, q)]
