"""The agent's state of a session (planbook/agent/state.py): one per session, typed, and gone
with the session, so a kernel that opens session after session does not keep the old ones."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest

from planbook.agent.context import decisions_of, todos_of
from planbook.agent.run import plan_task
from planbook.agent.state import state_of
from planbook.agents import Scripted
from planbook.errors import UsageMistake
from planbook.surfaces.widget.agent import stop
from tests.agent.conftest import make_session

pytestmark = pytest.mark.anyio

PLAN = Scripted(
    [
        ("insert_cell", {"source": "a = 1", "reason": "first"}),
        ("todo_write", {"todos": [{"content": "check a", "status": "pending"}]}),
        ("present_plan", {"summary": "One cell."}),
    ]
)


async def test_each_session_has_its_own_agent_state(tmp_path: Path) -> None:
    one, two = make_session(tmp_path), make_session(tmp_path)
    run = await plan_task(one, "a cell", model=PLAN)
    assert run.status == "finished", run.error
    assert state_of(one) is state_of(one) and state_of(one).run is run
    assert one.agent_run is run  # the notebook's name for it: `await pb.agent_run`
    assert [t.content for t in todos_of(one).views(one.current_plan())] == ["check a"]
    # The other session saw none of it: no run, no history, no todos, its own questions.
    assert state_of(two).run is None and state_of(two).history is None
    assert todos_of(two).views(two.current_plan()) == []
    assert decisions_of(two) is not decisions_of(one)
    with pytest.raises(UsageMistake, match="no agent run is in progress"):
        stop(two, None)  # the panel's Stop on the other session finds no run of its own


async def test_a_dropped_session_goes_with_its_agent_state(tmp_path: Path) -> None:
    session = make_session(tmp_path)
    run = await plan_task(session, "a cell", model=PLAN)
    assert run.status == "finished", run.error
    decisions_of(session)  # its events reach the session's observers: a closure over it
    assert state_of(session).reviser is not None  # `%plan revise` goes to the agent
    gone = weakref.ref(session)
    session.close()
    del session, run
    gc.collect()
    assert gone() is None
