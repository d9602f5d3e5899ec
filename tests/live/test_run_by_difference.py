"""A run of many steps in a live room (issue 10 item 8): each step's update carries that step,
not the plan, so its size does not grow with the plan; what planbook reads (its cached view of
the shared metadata), what another client sees and what the server saves are the same plan;
a change another client makes to the metadata is read at once; and the last commit reaches the
server even when the notebook is closed right after it (its confirmation is no longer waited
for in the commit)."""

from __future__ import annotations

import pytest

from planbook.documents.live.document import LiveNotebook, open_live
from planbook.engine.received import sign_record
from planbook.model.cell import Cell
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace
from tests.live.conftest import on_disk
from tests.live.yclient import YClient
from tests.support.jupyter_server import RunningServer

pytestmark = pytest.mark.server


def test_a_long_run_sends_each_step_not_the_plan(
    server: RunningServer, notebook: str, live: LiveNotebook, other: YClient
) -> None:
    session = Session(live, Workspace(server.root))
    anchor = "c3"
    for i in range(40):
        step = session.propose.insert_cell(f"v{i} = {i}", after=anchor, reason="speed")
        anchor = step.operation.cell_id  # type: ignore[union-attr]
    other.flush()
    sizes: list[int] = []
    subscription = other.doc.observe(lambda event: sizes.append(len(event.update)))
    try:
        report = session.approve()
        assert report.ok, report.lines()
        other.flush()
    finally:
        other.doc.unobserve(subscription)
    assert len(other.ids()) == 43
    # one update per step (and the run's start and end); the later steps, with a longer plan
    # behind them, send no more than the early ones
    early, late = sorted(sizes[2:12]), sorted(sizes[-12:-2])
    assert late[5] < early[5] * 1.5 + 200, (early, late)
    plan = live.get_metadata("planbook")
    assert other.metadata()["planbook"] == plan
    assert on_disk(server, notebook)["metadata"]["planbook"] == plan

    # a change from elsewhere (another kernel of this person: the mode signed with their key)
    # is read at once
    def ask_mode(signature: str | None) -> None:
        def edit(_ynb: object) -> None:
            record = other.meta["metadata"]["planbook"]
            record["mode"], record["mode_signature"] = "ask", signature

        other.edit(edit)
        assert live.wait_for(
            lambda _: (live.get_metadata("planbook") or {}).get("mode_signature") == signature
        )
        session.store.sync()

    ask_mode(sign_record(session.store.state, "mode", "ask"))
    assert session.store.state.mode == "ask"
    # the same mode chosen by someone else's planbook (no signature of this person's) is not
    # adopted: plan mode, with the reason in the session's warnings
    ask_mode(None)
    assert session.mode == "plan" and session.current_plan() is not None
    assert any("saved in ask mode elsewhere" in w for w in session.warnings), session.warnings


def test_the_last_commit_reaches_the_server_when_closed_at_once(
    server: RunningServer, notebook: str, other: YClient
) -> None:
    doc = open_live(server.url, server.token, notebook)
    with doc.transaction():
        doc.insert_cell(3, Cell(id="last", source="y = 2"))
    doc.close()
    assert other.wait_for(lambda o: "last" in o.ids())
