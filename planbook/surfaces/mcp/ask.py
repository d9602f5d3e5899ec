"""ask_person: an agent asks the person a question (a decision point) and goes on at once; the
question waits in the notebook for the person's answer (``%answer``, the panel, ``planbook
answer``) and wait_for_review brings the answer back. No tool answers a question: an answer
is the person's, signed where they gave it, and one not signed here is never handed on."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field

from planbook.model.questions import MAX_OPTIONS, OPTION_CHARS, QUESTION_CHARS, PersonQuestion
from planbook.model.store import PlanbookState
from planbook.present.bounded import clip
from planbook.sessions.served import ServedNotebooks
from planbook.sessions.session import Session
from planbook.surfaces.mcp.calls import client_origin, in_thread
from planbook.surfaces.mcp.limits import Notebook
from planbook.surfaces.mcp.propose_tools import PageStaging, Proposals, in_page

Question = Annotated[
    str,
    Field(
        min_length=1,
        max_length=QUESTION_CHARS,
        description="The question, in a sentence or two: the person reads it where they work.",
    ),
]
Options = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=OPTION_CHARS)]] | None,
    Field(
        max_length=MAX_OPTIONS,
        description="Answers to offer as buttons; the person may answer in their own words too.",
    ),
]
#: Asking writes the question into the notebook's record and changes nothing else.
_ASKS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)


def question_lines(state: PlanbookState, question: PersonQuestion) -> list[str]:
    """One question as wait_for_review reports it: the person's answer only when it was given
    (and signed) where the person works; one recorded elsewhere is said to be no answer."""
    head = f"- question {question.id}: {clip(question.question, 200)}"
    if Session.answered_in(state, question):
        if question.state == "withdrawn":
            return [head, f"   withdrawn by {question.answered_by}: no answer will come"]
        return [head, f"   answered by {question.answered_by}: {question.answer}"]
    if question.is_open:
        return [head, "   still open: the person has not answered"]
    return [
        head,
        "   still open: the answer recorded for it was not given by the person here (it "
        "carries no signature of theirs), so it is not theirs; they can answer it",
    ]


def question_waits(state: PlanbookState, question: PersonQuestion) -> bool:
    return not Session.answered_in(state, question)


def asked_text(where: str, question_id: str) -> str:
    return (
        f"Asked question {question_id} in {where}. It waits for the person's answer "
        "(the panel, `%answer`, or `planbook answer`); call wait_for_review "
        f'(question_ids=["{question_id}"]) to get it.'
    )


def register(
    server: MCPServer,
    target: ServedNotebooks,
    proposals: Proposals,
    pages: PageStaging | None = None,
) -> None:
    @server.tool(annotations=_ASKS)
    async def ask_person(
        question: Question,
        ctx: Context[Any, Any],
        options: Options = None,
        notebook: Notebook = None,
    ) -> str:
        """Ask the person a question and go on at once: it waits in the notebook for their
        answer (the panel, `%answer`, or `planbook answer`); wait_for_review brings it back.
        Nothing else changes. Only the person answers: no tool does."""
        origin = client_origin(ctx)
        mine = proposals.of(ctx)  # this client's questions, for its wait_for_review
        arguments = {"question": question, "options": options or []}
        staged = await in_page(pages, target, notebook, "ask_person", arguments, origin)
        if staged is not None:  # the open page holds the notebook: asked through its kernel
            mine.asked(staged[0], staged[1])
            return asked_text(target.shown(staged[0]), staged[1])

        def work() -> str:
            session = target.session(notebook)
            asked = session.ask_person(question, options or [], origin=origin)
            path = session.notebook_path
            if path is not None:
                mine.asked(path, asked.id)
            where = target.shown(path) if path is not None else "the notebook"
            return asked_text(where, asked.id)

        return await in_thread(work)
