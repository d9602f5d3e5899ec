"""A server restart during a plan: the live document reconnects and the plan goes on; with the
server gone, approval fails with a clear message and no step is half applied."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from planbook.documents.live.document import LiveNotebook, open_live
from planbook.errors import PlanbookError
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace
from tests.live.conftest import disk_sources, on_disk
from tests.live.yclient import YClient
from tests.support.jupyter_server import RunningServer, start_jupyter

pytestmark = pytest.mark.server


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[RunningServer]:
    """A server of its own: these tests stop and restart it."""
    with start_jupyter(tmp_path / "root") as running:
        running.write_notebook("plan.ipynb", ["a = 1", "b = 2", "c = 3"])
        yield running


@pytest.fixture
def doc(own_server: RunningServer) -> Iterator[LiveNotebook]:
    live = open_live(own_server.url, own_server.token, "plan.ipynb")
    yield live
    live.close()


def staged(doc: LiveNotebook, root: Path) -> Session:
    session = Session(doc, Workspace(root))
    ids = [c.id for c in doc.cells()]
    for n, cell_id in enumerate(ids, 1):
        session.propose.edit_cell(cell_id, f"step = {n}", reason=f"step {n}")
    return session


@pytest.mark.parametrize("crash", [False, True], ids=["restart", "crash-and-restart"])
def test_the_plan_goes_on_after_the_server_comes_back(
    own_server: RunningServer, doc: LiveNotebook, crash: bool
) -> None:
    session = staged(doc, own_server.root)
    assert session.approve("1").ok
    doc.save()
    own_server.restart(crash=crash)

    report = session.approve("2-3")
    assert report.ok, report.lines()

    other = YClient(own_server, "plan.ipynb")
    try:
        assert other.sources() == ["step = 1", "step = 2", "step = 3"]  # no duplicated cells
        assert "planbook" in other.metadata()
    finally:
        other.close()
    doc.save()
    assert disk_sources(on_disk(own_server, "plan.ipynb")) == ["step = 1", "step = 2", "step = 3"]


def test_with_the_server_gone_approval_fails_clearly_and_applies_nothing(
    own_server: RunningServer, doc: LiveNotebook
) -> None:
    session = staged(doc, own_server.root)
    assert session.approve("1").ok
    doc.save()
    own_server.stop()
    doc.confirm_timeout = 2.0

    with pytest.raises(PlanbookError, match=r"unreachable.*nothing was applied"):
        session.approve("2")

    own_server.start()
    other = YClient(own_server, "plan.ipynb")
    try:
        assert other.sources() == ["step = 1", "b = 2", "c = 3"]
    finally:
        other.close()
    # the live document is back, and the same session approves the step again
    assert doc.sync(10)
    assert [v.status for v in session.step_views()] == ["done", "pending", "pending"]
    report = session.approve("2")
    assert report.ok, report.lines()
    assert [c.source for c in doc.cells()][:2] == ["step = 1", "step = 2"]
