"""No cyclic-collector pass while a live room's document is held (documents/collector.py): a
pass there frees whatever cycles it finds, and releasing a pycrdt object among them may need
the store the holder's transaction has. pycrdt then panicked (ExclusiveAcqFailed, in the racing
test of test_live_faults.py) and, once its timing moved, crashed the process inside its commit.

A run of inserted steps while another client edits the same notebook, with the collector made
to start a pass every few allocations: none starts while our copy of the document has a
transaction open (our commits, our reads, the server's updates applied by the sync thread),
and the collector still runs between them."""

from __future__ import annotations

import gc
import itertools
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from planbook.documents.live.document import LiveNotebook
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace
from tests.live.yclient import YClient
from tests.support.jupyter_server import RunningServer

pytestmark = pytest.mark.server


class Passes:
    """The collector's passes, told apart by whether ``doc`` had a transaction open."""

    def __init__(self) -> None:
        self.doc: Any = None
        self.while_held = 0
        self.elsewhere = 0

    def seen(self, phase: str, info: dict[str, Any]) -> None:
        if phase != "start":
            return
        if getattr(self.doc, "_txn", None) is not None:  # pycrdt's open transaction, if any
            self.while_held += 1
        else:
            self.elsewhere += 1


@pytest.fixture
def passes() -> Iterator[Passes]:
    found = Passes()
    thresholds = gc.get_threshold()
    gc.set_threshold(25, 1, 1)  # a young pass every 25 allocations, older ones often
    gc.callbacks.append(found.seen)
    try:
        yield found
    finally:
        gc.callbacks.remove(found.seen)
        gc.set_threshold(*thresholds)


def test_no_collector_pass_starts_while_the_room_document_is_held(
    server: RunningServer, live: LiveNotebook, other: YClient, passes: Passes
) -> None:
    session = Session(live, Workspace(server.root))
    passes.doc = live._room.doc
    anchor = live.cells()[0].id
    for i in range(20):
        step = session.propose.insert_cell(f"v{i} = {i}", after=anchor, reason="the collector")
        anchor = step.operation.cell_id  # type: ignore[union-attr]
    stop = threading.Event()

    def edit_meanwhile() -> None:  # the server's updates reach our copy during the run
        for n in itertools.count():
            if stop.wait(0.005):
                return
            other.set_source(other.ids()[0], f"x = {n}")

    editor = threading.Thread(target=edit_meanwhile, daemon=True)
    editor.start()
    try:
        report = session.approve()
    finally:
        stop.set()
        editor.join(5)
    assert report.ok, report.lines()
    assert live._room.doc is passes.doc  # (no reload: the copy looked at is the one used)
    assert passes.elsewhere > 0  # the collector ran, between the holds
    assert passes.while_held == 0, f"{passes.while_held} passes while the document was held"
