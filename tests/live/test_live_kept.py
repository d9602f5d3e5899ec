"""What a live document keeps for its next commit (``LiveNotebook.coalesced``, which an approval
runs inside): a change of the metadata alone is kept, read back at once, and reaches the room in
the update of the next change; a commit that fails keeps it; the block's end sends what is left.
So an approval travels with its first step's cell: no page ever holds one without the other."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planbook.documents.base import DELETE, apply_metadata_changes
from planbook.documents.live.document import LiveNotebook, open_live
from planbook.documents.live.operations import Txn, merged_changes
from planbook.engine.executor.run import Executor
from planbook.errors import ConflictError
from planbook.model.cell import Cell
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace
from tests.live.conftest import disk_sources, on_disk, waited
from tests.live.yclient import UpdatesSeen, YClient
from tests.support.jupyter_server import RunningServer
from tests.support.tcp_proxy import TcpProxy

KEY = "kept_test"
_names = itertools.count(1)


@pytest.mark.server
def test_a_record_change_is_kept_and_travels_with_the_next_change(
    live: LiveNotebook, other: YClient
) -> None:
    seen = UpdatesSeen(other)
    with live.coalesced():
        live.update_metadata(KEY, {("approved",): ["s1"]})
        # read back at once, in this process, as if committed
        assert live.get_metadata(KEY) == {"approved": ["s1"]}
        assert live.save_kept
        live.insert_cell(3, Cell(id="new", cell_type="code", source="y = 2"))
        assert not live.save_kept  # it went with the cell
    assert other.wait_for(lambda o: o.ids()[-1:] == ["new"])
    other.flush()
    assert other.metadata().get(KEY) == {"approved": ["s1"]}
    # one update brought both: never the record without the cell, nor the cell without it
    arrived = [
        (cells[-1]["source"] == "y = 2", KEY in metadata) for cells, metadata in seen.states()
    ]
    assert (True, True) in arrived and (False, True) not in arrived, arrived
    assert (True, False) not in arrived, arrived


@pytest.mark.server
def test_a_failed_commit_keeps_what_was_kept_and_the_block_end_sends_it(
    live: LiveNotebook, other: YClient
) -> None:
    with live.coalesced():
        live.update_metadata(KEY, {("approved",): ["s1"]})
        with pytest.raises(ConflictError), live.transaction():
            cell = live.find_cell("c2")
            assert cell is not None
            # their edit reaches the server while this transaction is under way
            other.set_source("c2", "x = 'theirs'")
            other.flush()
            live.replace_cell(cell.cell.model_copy(update={"source": "x = 'ours'"}))
        assert live.save_kept  # the conflict applied nothing, and kept the record change
        assert live.get_metadata(KEY) == {"approved": ["s1"]}
        live.update_metadata(KEY, {("failed",): ["s1"]})  # what a run records next: kept too
    # the block's end sent both changes, alone
    assert other.wait_for(lambda o: o.metadata().get(KEY) == {"approved": ["s1"], "failed": ["s1"]})
    assert other.sources()[1] == "x = 'theirs'"  # theirs kept, ours not applied
    assert not live.save_kept


@pytest.mark.server
def test_make_durable_sends_what_is_kept_first(live: LiveNotebook, other: YClient) -> None:
    with live.coalesced():
        live.update_metadata(KEY, {("running",): "s1"})
        assert live.save_kept
        assert live.make_durable() == ""
        assert not live.save_kept
        # the server has it: another client sees it without the block having ended
        assert other.wait_for(lambda o: o.metadata().get(KEY) == {"running": "s1"})


# -- merging changes by part ----------------------------------------------------------------

_parts = st.sampled_from(["a", "b", "c"])
_paths = st.lists(_parts, min_size=1, max_size=3).map(tuple)
_values = st.one_of(
    st.integers(0, 9),
    st.dictionaries(_parts, st.integers(0, 9), max_size=2),
    st.just(DELETE),
)
_changes = st.dictionaries(_paths, _values, max_size=4)
_json = st.recursive(
    st.integers(0, 9), lambda inner: st.dictionaries(_parts, inner, max_size=3), max_leaves=8
)


@settings(max_examples=400, deadline=None)
@given(root=st.dictionaries(_parts, _json, max_size=3), first=_changes, then=_changes)
def test_record_changes_merged_in_a_transaction_make_what_they_make_in_order(
    root: dict[str, Any], first: dict[Any, Any], then: dict[Any, Any]
) -> None:
    """A transaction merges a record change into the one it holds for the same key (a kept
    approval, then its step's record): what it reads and commits must be what applying both
    in order gives, whatever paths overlap, lie below one another or delete."""
    txn = Txn(cells=[], began=[], began_ids=[])
    txn.update_metadata(KEY, first)
    txn.update_metadata(KEY, then)
    in_order = apply_metadata_changes(apply_metadata_changes(root, first), then)
    read = root
    for changes in txn.parts[KEY]:
        read = apply_metadata_changes(read, changes)
    assert read == in_order
    committed = root
    for op in txn.ops:
        committed = apply_metadata_changes(committed, op.value)
    assert committed == in_order
    # merged into one (one walk of the shared maps at commit) unless that would differ
    assert len(txn.ops) == (1 if merged_changes(first, then) is not None else 2)


@pytest.mark.server
def test_an_approval_kept_while_the_room_goes_away_is_not_lost(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The room goes away after the approval was kept and before its first step: ``approve()``
    still returns its report (the step could not be applied), and nothing of the record is
    lost: once the room is back the kept approval reaches it, and the step runs once."""
    name = f"kept-{next(_names)}.ipynb"
    server.write_notebook(name, ["x = 1"])
    with TcpProxy(server.port) as proxy:
        doc = open_live(proxy.url, server.token, name)
        doc.confirm_timeout = 1.0
        try:
            session = Session(doc, Workspace(server.root))
            session.propose.insert_cell("y = 2", after=doc.cells()[0].id)
            run = Executor.run

            def room_away_first(executor: Executor, *args: Any) -> Any:
                assert doc.save_kept  # the approval, kept for the first step's update
                proxy.outage(3.0)
                assert waited(lambda: not doc.connected, 5.0)  # the client saw it go
                return run(executor, *args)

            monkeypatch.setattr(Executor, "run", room_away_first)
            report = session.approve()  # returns: no exception out of the kept block
            monkeypatch.undo()
            assert not report.ok
            assert [o.status for o in report.outcomes] == ["pending"]  # approve it again
            proxy.heal()
            assert doc.sync(10)  # the room is back
            again = session.approve()
            assert again.ok, again.lines()
        finally:
            doc.close()
    nb = on_disk(server, name)
    assert disk_sources(nb) == ["x = 1", "y = 2"]  # the step ran once
    plans = nb["metadata"]["planbook"]["plans"]
    (plan,) = plans.values()
    assert len(plan["approvals"]) == 2  # the kept one reached the room too: none lost
    assert [s["status"] for s in plan["revisions"][-1]["steps"]] == ["done"]
