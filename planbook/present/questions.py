"""Questions MCP clients asked the person, as the text surfaces show them (``%answer``,
``planbook show``): one line each with its id, who asked, the question and the options, every
word of it made visible (an agent wrote it: no control character reaches the terminal)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from planbook.model.questions import PersonQuestion
from planbook.present.safe import visible


def question_line(question: PersonQuestion, answered_here: Callable[[PersonQuestion], bool]) -> str:
    """``q1 (from claude-code 2.1 (MCP)): Drop the rows? [yes / no]``, and what a received
    answer says when the record carries one the person here did not give."""
    options = " / ".join(question.options) if question.options else "free text"
    line = f"{question.id} (from {question.origin}): {question.question} [{options}]"
    if not question.is_open and not answered_here(question):
        by = question.answered_by or "someone"
        line += f" (received: {question.state} elsewhere by {by}; not yours until you answer)"
    return visible(" ".join(line.split()))


def questions_text(
    questions: Sequence[PersonQuestion],
    answered_here: Callable[[PersonQuestion], bool],
    how: str,
) -> str:
    """The waiting questions, one line each, then how to answer (``how``: the command with
    ``QID`` and ``ANSWER`` in it)."""
    lines = [f"  {question_line(q, answered_here)}" for q in questions]
    return "\n".join([*lines, f"  answer with {how}"])
