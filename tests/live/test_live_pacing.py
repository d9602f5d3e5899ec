"""What a live run waits for (issue 25 item 5): a run of cell-inserting steps is paced by its
own work, not by a round trip to the server per step, and each step reaches the room as one
update holding its cell and one write of the plan's record; a step that rewrites a cell still
waits for the server's state before it compares the cell (a conflict, not a merge)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from planbook.documents.live.document import LiveNotebook, open_live
from planbook.documents.live.room import ASK_EVERY, Room
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace
from tests.live.conftest import disk_sources, on_disk
from tests.live.yclient import YClient
from tests.support.jupyter_server import RunningServer

pytestmark = pytest.mark.server

_names = itertools.count(1)


@contextmanager
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """Counts, while inside: waits for the answer to a sync request (``Room.answered``,
    ``Room.sync``), sync requests sent (``Room._ask``), commits, and the record writes each
    commit carried."""
    seen: dict[str, Any] = {"waits": 0, "requests": 0, "commits": 0, "record_writes": []}

    def wrap(owner: Any, name: str, tally: Any) -> None:
        original = getattr(owner, name)

        def counting(self: Any, *args: Any, **kwargs: Any) -> Any:
            tally(args)
            return original(self, *args, **kwargs)

        monkeypatch.setattr(owner, name, counting)

    def one_wait(_: Any) -> None:
        seen["waits"] += 1

    def one_request(_: Any) -> None:
        seen["requests"] += 1

    def one_commit(args: Any) -> None:
        seen["commits"] += 1
        seen["record_writes"].append(sum(op.kind == "meta_part" for op in args[0].ops))

    wrap(Room, "answered", one_wait)
    wrap(Room, "sync", one_wait)
    wrap(Room, "_ask", one_request)
    wrap(LiveNotebook, "_commit", one_commit)
    yield seen
    monkeypatch.undo()


def approve_inserts(server: RunningServer, steps: int, monkeypatch: pytest.MonkeyPatch) -> Any:
    name = f"pacing-{next(_names)}.ipynb"
    server.write_notebook(name, ["x = 1"])
    doc = open_live(server.url, server.token, name)
    try:
        session = Session(doc, Workspace(server.root))
        anchor = doc.cells()[0].id
        for i in range(steps):
            step = session.propose.insert_cell(f"v{i} = {i}", after=anchor)
            anchor = step.operation.cell_id  # type: ignore[union-attr]
        with counted(monkeypatch) as seen:
            report = session.approve()
        assert report.ok and not report.notes, report.lines()
        inserted = [f"v{i} = {i}" for i in range(steps)]
        assert disk_sources(on_disk(server, name)) == ["x = 1", *inserted]
        return seen
    finally:
        doc.close()


def test_a_run_of_inserts_waits_for_no_round_trip_per_step(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    short = approve_inserts(server, 2, monkeypatch)
    long = approve_inserts(server, 8, monkeypatch)
    # the approval's save and the run's end's wait for the server; the steps do not
    assert long["waits"] == short["waits"], (short, long)
    # one commit per step (its cell, checkpoint and "done"; the first one's holds the
    # approval too: LiveNotebook.coalesced), then the end
    assert (short["commits"], long["commits"]) == (2 + 1, 8 + 1)
    # a step sends its update alone: the end's save asks once for the server's answer, which
    # confirms every update sent before it (the server answers in order); no step compares
    # a cell, so none asks to
    assert long["requests"] == short["requests"], (short, long)
    # each step's update writes the plan's record once (it was twice: checkpoint, then done)
    assert long["record_writes"] == [1] * long["commits"]


def test_updates_sent_alone_are_confirmed_at_least_every_sixteen(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # what a reload would replay stays short: 42 updates (the approval, 40 steps, the run's
    # end) ask twice on the way, where 4 ask only at the end's save
    short = approve_inserts(server, 2, monkeypatch)
    long = approve_inserts(server, 40, monkeypatch)
    assert ASK_EVERY == 16
    assert long["requests"] == short["requests"] + 2, (short, long)


def test_a_step_that_rewrites_a_cell_still_sees_an_edit_made_just_before_it(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"pacing-{next(_names)}.ipynb"
    server.write_notebook(name, ["x = 1"])
    doc = open_live(server.url, server.token, name)
    other = YClient(server, name)
    try:
        session = Session(doc, Workspace(server.root))
        target = doc.cells()[0].id
        session.propose.edit_cell(target, "x = 2")
        with counted(monkeypatch) as seen:
            # the person's edit reaches the server (and their client waits for it) just
            # before the approval: the step's commit compares the cell with what the server has
            other.set_source(target, "x = 'theirs'")
            other.flush()
            report = session.approve()
        assert [o.status for o in report.outcomes] == ["conflict"]
        assert seen["waits"] >= 1
        other.flush()
        assert other.sources() == ["x = 'theirs'"]  # theirs kept, ours not applied
        # the approval was kept for the step's update, which the conflict refused: it reached
        # the room all the same, with the step's "conflict"
        plans = other.metadata()["planbook"]["plans"]
        (plan,) = plans.values()
        assert len(plan["approvals"]) == 1
        assert [s["status"] for s in plan["revisions"][-1]["steps"]] == ["conflict"]
    finally:
        other.close()
        doc.close()
