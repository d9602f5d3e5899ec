"""The tutorials that edit the open notebook, as a class meets them: opened in JupyterLab with
jupyter-collaboration (a real server, its kernel, another client in the room as the page), run
from the top, then again. The quickstart after Restart & Run All gives the same page and leaves
no step pending; plan-vs-act runs the scripted agent on the open notebook itself (the notes
cell goes before the page's eyes in act mode and comes back), rehearsed twice in one kernel."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import nbformat
import pytest

from planbook.workspace.overlay import overlay_probe
from tests.live.yclient import YClient
from tests.support.jupyter_server import RunningServer, start_jupyter

pytestmark = [pytest.mark.server, pytest.mark.kernel]

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def statuses(room: YClient) -> list[str]:
    from planbook.engine.stored_record import from_layout  # the stored layout keeps plans by id

    stored = from_layout(room.metadata().get("planbook") or {})
    return [s["status"] for p in stored.get("plans", []) for s in p["revisions"][-1]["steps"]]


@contextmanager
def opened(tmp_path: Path, name: str) -> Iterator[tuple[RunningServer, str, YClient]]:
    """The shipped notebook opened as JupyterLab opens it: the server, its kernel's id, and a
    client in the notebook's room standing for the page."""
    with start_jupyter(tmp_path / "root") as server:
        shutil.copy(NOTEBOOKS / name, server.root / name)
        session = server.create_session(name)
        room = YClient(server, name)
        try:
            yield server, session["kernel"]["id"], room
        finally:
            room.close()
            server.api("DELETE", f"api/sessions/{session['id']}")


def run_all(server: RunningServer, kernel_id: str, name: str) -> dict[str, dict[str, Any]]:
    """Every code cell of the shipped notebook, in order, as Run All does: what each said."""
    said = {}
    for cell in nbformat.read(NOTEBOOKS / name, as_version=4).cells:
        if cell.cell_type == "code":
            result = server.execute(kernel_id, cell.source, timeout=180)
            assert result["error"] is None, (cell.id, result["error"], result["stderr"])
            said[cell.id] = result
    return said


def test_the_quickstart_gives_the_same_page_after_restart_and_run_all(tmp_path: Path) -> None:
    with opened(tmp_path, "quickstart.ipynb") as (server, kernel_id, room):
        pages = []
        for attempt in range(2):
            said = run_all(server, kernel_id, "quickstart.ipynb")
            assert said["setup"]["stdout"].startswith("live: "), said["setup"]["stdout"]
            assert "started over" in said["start-over"]["stdout"]
            assert "rolled back 2 steps" in said["rollback-all"]["stdout"], attempt
            pages.append([(c["id"], str(c["source"])) for c in room.cells()])
            # followed literally, no step is left pending: each one was decided
            assert "pending" not in statuses(room) and statuses(room), statuses(room)
            server.api("POST", f"api/kernels/{kernel_id}/restart")
        assert pages[0] == pages[1]
        assert [i for i, _ in pages[0]] == [
            c.id for c in nbformat.read(NOTEBOOKS / "quickstart.ipynb", as_version=4).cells
        ]


#: Whether a shell step is undone by rollback on this machine (its overlay works here).
SHELL_UNDONE = overlay_probe().available


def test_plan_vs_act_runs_the_agent_on_the_open_notebook_again_and_again(tmp_path: Path) -> None:
    cells = nbformat.read(NOTEBOOKS / "plan-vs-act.ipynb", as_version=4).cells
    with opened(tmp_path, "plan-vs-act.ipynb") as (server, kernel_id, room):
        ends = []
        for _ in range(2):  # the class, then the rehearsal, in one kernel
            seen: dict[str, Any] = {}
            for cell in cells:
                if cell.cell_type != "code":
                    continue
                result = server.execute(kernel_id, cell.source, timeout=180)
                assert result["error"] is None, (cell.id, result["error"], result["stderr"])
                if cell.id == "setup":
                    assert result["stdout"].startswith("live: "), result["stdout"]
                if cell.id == "run-plan":  # staged: on the page, as badges, nothing changed
                    assert statuses(room) == ["pending", "pending", "pending"]
                    assert "my-notes" in room.ids()
                if cell.id == "run-act":  # applied at once: the notes cell left the page
                    room.wait_for(lambda y: "my-notes" not in y.ids(), 10)
                    seen["act"] = (result["stdout"], room.ids())
            ends.append([(c["id"], str(c["source"])) for c in room.cells()])
            log, ids_after_act = seen["act"]
            assert "my-notes" not in ids_after_act
            presented = [line for line in log.splitlines() if "plan presented" in line]
            assert presented == ["  status  plan presented with 3 steps: 3 applied"], log
            # the rollback puts back the file the shell step removed, where shell steps run
            # in an overlay; elsewhere it stays removed (docs/what-it-cannot-do.md)
            assert (server.root / "field-notes.txt").exists() == SHELL_UNDONE
        # the rollback brought the notes back; the second run ends exactly as the first
        assert ends[0] == ends[1]
        assert [i for i, _ in ends[0]] == [c.id for c in cells]
