"""Saves reuse the dumps of steps nobody assigned to since the last save, told by a count of
assignments kept for all steps together (``Step.changes``, ``Step.assigned``): several
sessions at once (an MCP endpoint serving many notebooks, a preview on its own thread) assign
to their steps from several threads, and a save must still hold every status of its own plan.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from planbook.documents.file import FileNotebook
from planbook.model.plan import ASSIGNED, Step
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace
from tests.conftest import make_notebook


@pytest.fixture(autouse=True)
def switch_often() -> Iterator[None]:
    """Threads switch every microsecond instead of every 5 ms: a thread is stopped between
    the two updates of an assignment far more often (the races these tests look for)."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def open_session(path: Path) -> Session:
    return Session(FileNotebook(path), Workspace(path.parent))


def test_the_latest_assignments_are_the_latest_steps_assigned_to_while_threads_assign() -> None:
    """A reader asking "which steps were assigned to since then?" while another thread
    assigns gets exactly those steps: never a count that is ahead of the steps kept."""
    steps = [Step.model_construct(reason="r") for _ in range(20_000)]
    base = Step.changes
    done = threading.Event()

    def assign() -> None:
        for i, step in enumerate(steps):
            step.reason = str(i)
        done.set()

    thread = threading.Thread(target=assign)
    thread.start()
    wrong = 0
    try:
        while not done.is_set():
            then = Step.changes - 1
            now, window = Step.assigned_since(then)
            if then < base:
                continue
            # None: more than ASSIGNED since then, no longer all kept (a save looks at all)
            if window != (steps[then - base : now - base] if now - then <= ASSIGNED else None):
                wrong += 1
    finally:
        thread.join()
    assert wrong == 0
    assert Step.changes - base == len(steps)


def test_a_save_holds_every_status_while_another_notebook_assigns_from_a_thread(
    tmp_path: Path,
) -> None:
    path = make_notebook(tmp_path / "mine.ipynb", [f"v{i} = {i}" for i in range(10)])
    other = make_notebook(tmp_path / "other.ipynb", ["w = 1"])
    mine, theirs = open_session(path), open_session(other)
    for k in range(60):
        mine.propose.edit_cell(f"c{k % 10 + 1}", f"v = {k}", reason="r")
    busy = theirs.propose.edit_cell("c1", "w = 2", reason="r")
    stop = threading.Event()

    def elsewhere() -> None:  # another notebook's steps, assigned to without a pause
        i = 0
        while not stop.is_set():
            busy.reason = f"r{i}"
            i += 1

    thread = threading.Thread(target=elsewhere)
    thread.start()
    try:
        for _ in range(6):
            assert mine.approve(first=10).ok
    finally:
        stop.set()
        thread.join()
    saved = json.loads(path.read_text())["metadata"]["planbook"]["plans"]
    (plan,) = saved.values()
    statuses = [s["status"] for s in plan["revisions"][-1]["steps"]]
    assert statuses == [s.status for s in mine.current_plan().steps] == ["done"] * 60
