"""The conversation kept with the notebook: written through the Store, read back after a restart.

``Keeper`` is the running agent's side: it collects messages, activity, todos and open questions
in a ``Conversation`` and writes it into ``metadata.planbook`` at every step of the run (after
each model reply and each round of tool calls), so a kernel that dies mid-run loses at most the
step in flight. The messages are serialized with pydantic-ai's ``ModelMessagesTypeAdapter`` and
compacted to a size bound first (old tool output pruned, then the oldest turns dropped behind a
note), because the notebook travels: a conversation must never make it heavy.

Reading (``saved``) never writes. A notebook without a conversation (stripped for sharing, or
never used with the agent) just starts a fresh one.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from planbook.agent.activity import Activity
from planbook.agent.decisions import Answer, Decision
from planbook.engine.received import record_is_local, sign_record
from planbook.engine.stored_record import conversation_of
from planbook.errors import MetadataError, UnknownDecision, invalid_as
from planbook.model.conversation import ActivityLine, Conversation, SavedDecision, Todo
from planbook.sessions.session import Session

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage  # heavy: pydantic-ai, for the type

_log = logging.getLogger(__name__)

#: Characters of serialized messages kept in the notebook (about 50k tokens).
MESSAGES_BUDGET = 200_000


def saved(session: Session) -> Conversation | None:
    """The conversation as the notebook has it now (another kernel may have written it)."""
    session.store.sync()
    return conversation_of(session.store.state)


def update(session: Session, change: Callable[[Conversation], Conversation | None]) -> Conversation:
    """Change (or replace) the saved conversation under the session's transaction, and save."""
    return session.edit_conversation(change)


def dump_messages(messages: list[ModelMessage]) -> list[dict[str, Any]]:
    # heavy: pydantic-ai (the agent extra)
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    dumped: list[dict[str, Any]] = ModelMessagesTypeAdapter.dump_python(messages, mode="json")
    return dumped


def load_messages(raw: list[dict[str, Any]]) -> list[ModelMessage]:
    """The saved messages, or a one-line error (the notebook is left as it is)."""
    from pydantic_ai.messages import ModelMessagesTypeAdapter  # heavy: pydantic-ai

    def damaged(where: str, problem: str) -> MetadataError:
        return MetadataError(
            f"the agent's saved messages are damaged at {where}: {problem}; nothing was changed: "
            'start a new task with `%plan "..."` (the plan and its history are kept)'
        )

    with invalid_as(damaged, whole="messages"):
        return list(ModelMessagesTypeAdapter.validate_python(raw))


def compact(messages: list[ModelMessage], budget: int) -> list[ModelMessage]:
    """Messages whose JSON fits ``budget``: old tool output pruned, then the oldest turns
    replaced by a one-line note (the history stays well-formed: it restarts at a reply)."""
    from planbook.agent.history import prune, replace_head, start_points  # heavy: pydantic-ai

    def size(msgs: list[ModelMessage]) -> int:
        return len(json.dumps(dump_messages(msgs), ensure_ascii=False))

    if size(messages) <= budget:
        return messages
    out = prune(messages, budget // 2)
    for start in start_points(out):
        if start == 0:
            continue
        candidate = replace_head(
            out, start, f"[{start} earlier messages were dropped to keep the notebook small]"
        )
        if size(candidate) <= budget:
            return candidate
    return out


class Keeper:
    """Writes the running agent's conversation into the notebook as the run goes."""

    def __init__(self, session: Session, conversation: Conversation) -> None:
        self.session = session
        self.conversation = conversation

    def flush(self) -> None:
        snapshot = self.conversation.model_copy(deep=True)

        def put(conversation: Conversation) -> Conversation:
            # The person may have answered a saved question meanwhile: keep those answers.
            answered = {d.id: d for d in conversation.decisions if d.answer is not None}
            snapshot.decisions = [answered.get(d.id, d) for d in snapshot.decisions]
            return snapshot

        try:
            update(self.session, put)
        except Exception:
            # Remembering is a convenience: a save that fails must not end the agent's run.
            _log.exception("planbook: could not save the agent's conversation")

    def messages(self, messages: list[ModelMessage]) -> None:
        self.conversation.messages = dump_messages(compact(list(messages), MESSAGES_BUDGET))

    def activity(self, activity: Activity) -> None:
        self.conversation.add_activity(
            ActivityLine(
                at=datetime.now(UTC).isoformat(timespec="seconds"),
                type=activity.type,
                message=activity.message,
            )
        )

    def todos(self, todos: list[Todo]) -> None:
        self.conversation.todos = [t.model_copy() for t in todos]
        self.flush()

    def asked(self, decision: Decision, call_id: str | None) -> None:
        self.conversation.decisions.append(
            SavedDecision(
                id=decision.id,
                kind=decision.kind,
                question=decision.question,
                options=list(decision.options),
                allow_text=decision.allow_text,
                call_id=call_id,
            )
        )
        self.flush()

    def settled(self, decision_id: str) -> None:
        self.conversation.decisions = [
            d for d in self.conversation.decisions if d.id != decision_id
        ]


def answer_saved(session: Session, decision_id: str, answer: Answer) -> SavedDecision:
    """Record the answer to a question a previous kernel asked; ``%plan continue`` uses it."""
    found: list[SavedDecision] = []

    def put(conversation: Conversation) -> None:
        for decision in conversation.open_decisions():
            if decision.id == decision_id:
                decision.answer = answer.choice
                decision.answer_text = answer.text
                decision.answer_args = answer.args
                content = _answer_content(decision)
                decision.signature = sign_record(session.store.state, "answer", content)
                found.append(decision)

    conversation = saved(session)
    open_ids = [d.id for d in conversation.open_decisions()] if conversation else []
    if decision_id not in open_ids:
        raise UnknownDecision(decision_id, open_ids)
    update(session, put)
    return found[0]


def _answer_content(decision: SavedDecision) -> dict[str, Any]:
    return decision.model_dump(mode="json", exclude={"signature"})


def recorded_answers(session: Session, conversation: Conversation) -> dict[str, Answer]:
    """Answers this person gave after the run ended, by the tool call that asked. An answer
    recorded elsewhere (a received notebook's: unsigned, or signed by another key) is not
    one: its question is asked again."""
    return {
        d.call_id: Answer(choice=d.answer, text=d.answer_text, args=d.answer_args)
        for d in conversation.decisions
        if d.answer is not None and d.call_id and _answered_here(session, d)
    }


def _answered_here(session: Session, decision: SavedDecision) -> bool:
    content = _answer_content(decision)
    return record_is_local(session.store.state, "answer", content, decision.signature)


def answered_elsewhere(session: Session, conversation: Conversation | None) -> list[SavedDecision]:
    """The saved answers this person did not give here (shown as "recorded elsewhere")."""
    if conversation is None:
        return []
    return [
        d for d in conversation.decisions if d.answer is not None and not _answered_here(session, d)
    ]
