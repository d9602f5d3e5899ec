"""The cyclic collector is held off while a plan's views and text are built, and runs again
after, whether the build returned or raised, and stays off for a program that turned it off."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from planbook.documents.collector import collector_paused
from planbook.documents.memory import MemoryNotebook
from planbook.errors import PlanbookError
from planbook.model.cell import Cell
from planbook.present.views import step_views
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace

STEPS = 400


@pytest.fixture
def session(tmp_path: Path) -> Session:
    cells = [Cell(id=f"c{i}", source=f"v{i} = {i}\nprint(v{i})\n") for i in range(STEPS)]
    s = Session(MemoryNotebook(cells), Workspace(tmp_path))
    for i in range(STEPS):
        s.propose.edit_cell(f"c{i}", f"v{i} = {i} * 2\nprint(v{i})\n")
    return s


@pytest.fixture
def passes() -> Iterator[list[int]]:
    """The generations of the collector's passes while the test runs."""
    seen: list[int] = []

    def count(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    # a pass every 100 new objects: a plan of a few hundred steps starts many without the hold
    threshold = gc.get_threshold()
    gc.set_threshold(100, 10, 10)
    gc.enable()
    gc.callbacks.append(count)
    try:
        yield seen
    finally:
        gc.callbacks.remove(count)
        gc.set_threshold(*threshold)
        gc.enable()


def test_showing_a_long_plan_makes_no_collector_pass_while_it_builds(
    session: Session, passes: list[int]
) -> None:
    # Built without the hold, the same views start passes (what the hold saves) ...
    plan = session.current_plan()
    assert plan is not None
    step_views(plan, session.cells(), session.workspace, session.store.state)
    assert len(passes) >= 5
    # ... and shown through the session, at most the one young pass after each (the objects
    # made meanwhile are counted, and most of them are freed already); the text is whole.
    for show in (session.render_text, session.render_markdown, session.step_views):
        # from a known state: the collector's counts carry over from whatever ran before in
        # this process, and a young pass after the render then becomes an older one (gen 1
        # every 10 young passes) at a place that depends on the tests run before this one
        gc.collect()
        passes.clear()
        shown = show()
        assert passes in ([], [0])
        assert gc.isenabled()
        assert f"{STEPS}. " in shown if isinstance(shown, str) else len(shown) == STEPS


def test_the_collector_runs_again_after_a_build_that_raised(session: Session) -> None:
    with pytest.raises(PlanbookError):
        session.step_views(revision=99)  # no such revision
    assert gc.isenabled()


def test_a_program_that_turned_the_collector_off_keeps_it_off(session: Session) -> None:
    gc.disable()
    try:
        session.render_text()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_holds_from_two_threads_end_with_the_last() -> None:
    first_in, second_out = threading.Event(), threading.Event()

    def other() -> None:
        with collector_paused():
            first_in.set()
            second_out.wait(5)

    worker = threading.Thread(target=other)
    worker.start()
    assert first_in.wait(5)
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()  # the other thread's hold is still open
    second_out.set()
    worker.join(5)
    assert gc.isenabled()
