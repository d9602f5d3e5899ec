"""The agent as the panel shows it: its activity, its todo list, the questions it waits on,
and the questions agents outside the kernel asked over MCP (answered the same way).

Read through the agent's state (``planbook.agent.state``) and session events only, so the panel
works the same whether or not the agent ever ran (pydantic-ai is never imported here).
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from planbook.agent.state import Run, state_of
from planbook.errors import PlanbookError, UsageMistake
from planbook.model.events import Event
from planbook.present.safe import visible
from planbook.sessions.session import Session
from planbook.surfaces.widget.mainloop import call_on_main

#: Agent activity lines kept for the panel (the newest ones).
ACTIVITY_KEEP = 20
AGENT_EVENTS = frozenset({"agent_activity", "todos_changed", "decision_needed", "decision_made"})


def note_event(state: dict[str, Any], event: Event) -> None:
    """Keep what the panel shows of an agent event in ``state`` (activity and todos)."""
    if event.kind == "agent_activity" and event.message:
        line = visible(event.message)  # the model wrote it: no control character acts
        state["activity"] = [*state.get("activity", []), line][-ACTIVITY_KEEP:]
    elif event.kind == "todos_changed":
        state["todos"] = [
            {
                "text": visible(str(t.get("content", t.get("text", "")))),
                "status": str(t.get("status", "pending")),
                "steps": [int(n) for n in t.get("step_numbers", [])],
            }
            for t in event.data.get("todos", [])
            if isinstance(t, dict)
        ]


def _run(session: Session) -> Run | None:
    """The agent's run while it runs."""
    state = state_of(session)
    return state.run if state.running() else None


def agent_view(session: Session, state: dict[str, Any]) -> dict[str, Any] | None:
    """The ``agent`` part of the view, or None when there is nothing to show."""
    agent: dict[str, Any] = dict(state)
    decisions = state_of(session).decisions
    if decisions is not None:
        agent["decisions"] = [
            {
                "id": d.id,
                "kind": d.kind,
                "question": visible(d.question),
                "options": list(d.options),
                "allow_text": d.allow_text,
            }
            for d in decisions.pending()
        ]
    asked = person_questions(session)
    if asked:
        agent["decisions"] = [*agent.get("decisions", []), *asked]
    agent["running"] = _run(session) is not None
    return agent if any(agent.values()) else None


def person_questions(session: Session) -> list[dict[str, Any]]:
    """The questions agents outside the kernel asked over MCP, as the panel shows a decision:
    options as buttons, a field for the person's own words, and who asked. A notebook whose
    record cannot be read shows none here (the plan's own view says why)."""
    try:
        # as last read: the panel reads the record again on every plan change, and this
        # runs on each agent event too
        waiting = session.person_questions(waiting_only=True, fresh=False)
    except PlanbookError:
        return []
    return [
        {
            "id": q.id,
            "kind": "person_question",
            "question": visible(q.question),
            "options": list(q.options),
            "allow_text": True,
            "origin": visible(q.origin),
            "received": None if q.is_open else visible(q.answered_by or "someone"),
        }
        for q in waiting
    ]


def asked_over_mcp(decision_id: str) -> bool:
    """Whether the id names an MCP client's question (``q1``; the agent's decisions are
    ``d1``): told by its form, without reading the Session (a run may hold it)."""
    return re.fullmatch(r"q[0-9]+", decision_id) is not None


def answer(session: Session, decision_id: str, choice: str, text: str | None) -> None:
    """Settle one of the agent's open questions (thread-safe on the agent's side), or answer
    an MCP client's question with the option chosen or the words typed."""
    if asked_over_mcp(decision_id):
        session.answer_question(decision_id, choice)
        return
    decisions = state_of(session).decisions
    if decisions is None:
        raise UsageMistake("no question is waiting for an answer")
    decisions.answer(decision_id, choice, text=text)


def stop(session: Session, home: asyncio.AbstractEventLoop | None) -> None:
    """End the agent's run; its task lives on the kernel's main loop, so it is cancelled there."""
    run = _run(session)
    if run is None:
        raise UsageMistake("no agent run is in progress")
    call_on_main(run.stop, home)
