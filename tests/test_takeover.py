"""A step left running by a process on another host: shown with its host and process, taken
over only on request (Session.take_over, `%plan takeover N`, `planbook takeover NB N`), never
from a live process on this host; a dead one on this host is settled on its own, as before.

The notebooks are made with planbook, then edited as plain JSON the way a notebook received
from another machine, mid-run, carries its runner's token."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

from planbook.engine import owner
from planbook.engine.approval import approval_hash
from planbook.engine.received import signed_approval
from planbook.errors import NothingToDo, UsageMistake
from planbook.model.plan import Approval, Step
from planbook.surfaces import plan_verbs
from planbook.surfaces.cli.main import EXIT_OK, EXIT_USAGE, main
from tests.attack.mp_workers import open_session
from tests.conftest import make_notebook

#: A runner on another host; each test its own pid, since a process that took a runner over
#: treats it as gone from then on.
_PIDS = itertools.count(4242)


def _elsewhere() -> tuple[str, str]:
    pid = next(_PIDS)
    return f"laptop-7.example:{pid}:1234567", f"process {pid} on laptop-7.example"


def _staged(tmp_path: Path, *, approve: bool = False) -> Path:
    path = make_notebook(tmp_path / "nb.ipynb", ["a = 1"])
    session = open_session(path)
    session.propose.write_file("out.txt", "x\n", reason="export")
    if approve:
        assert session.approve().ok
    session.close()
    return path


def _left_running(path: Path, token: str, status: str = "running") -> None:
    """Edit the file as a notebook saved mid-run by ``token``'s process carries it."""
    data = json.loads(path.read_text())
    plan: dict[str, Any] = next(iter(data["metadata"]["planbook"]["plans"].values()))
    plan["state"] = "executing"
    step = plan["revisions"][-1]["steps"][0]
    step["status"], step["run_by"] = status, token
    # approved by this same person (their signing key shared with that host): a received
    # approval would send the step back to pending (tests/attack/test_received_notebooks.py)
    approval = Approval(revision=1, step_ids=(step["id"],), sha256=approval_hash([Step(**step)]))
    state = open_session(path).store.state  # signed in this notebook, at this place
    plan["approvals"].append(signed_approval(state, plan["id"], approval).model_dump(mode="json"))
    assert state.notebook is not None
    data["metadata"]["planbook"]["notebook"] = state.notebook.model_dump(mode="json")
    path.write_text(json.dumps(data, indent=1))


def _status(path: Path) -> str:
    plan = open_session(path).current_plan()
    assert plan is not None
    return plan.steps[0].status


def test_a_step_running_on_another_host_is_shown_with_its_host_and_process(
    tmp_path: Path,
) -> None:
    path = _staged(tmp_path)
    token, runner = _elsewhere()
    _left_running(path, token)
    session = open_session(path)
    text = session.render_text()
    assert f"running in {runner}" in text
    assert "`%plan takeover 1`" in text
    with pytest.raises(UsageMistake, match=runner):
        session.approve(1)  # it still waits: another host cannot be checked from here


def test_taking_over_asks_first_then_leaves_it_pending_to_approve_here(tmp_path: Path) -> None:
    path = _staged(tmp_path)
    token, runner = _elsewhere()
    _left_running(path, token)
    before = path.read_bytes()
    session = open_session(path)
    asked = session.take_over(1)
    assert not asked.done and runner in asked.line
    assert path.read_bytes() == before  # asking changes nothing
    taken = session.take_over(1, confirm=True)
    assert taken.done and "pending again" in taken.line
    assert not (tmp_path / "out.txt").exists()  # nothing ran here
    assert _status(path) == "pending"
    log = [e for e in open_session(path).store.state.log if e.event == "takeover"]
    assert len(log) == 1 and "laptop-7.example" in log[0].detail
    assert open_session(path).approve().ok  # retried here
    assert (tmp_path / "out.txt").read_text() == "x\n"


def test_a_taken_over_step_whose_change_landed_keeps_its_checkpoint(tmp_path: Path) -> None:
    path = _staged(tmp_path, approve=True)
    _left_running(path, _elsewhere()[0])
    session = open_session(path)
    taken = session.take_over(1, confirm=True)
    assert "its checkpoint is kept" in taken.line
    plan = session.current_plan()
    assert plan is not None and plan.steps[0].checkpoint is not None
    assert session.checkpoints()  # it can be rolled back


def test_an_approved_step_of_another_host_can_be_taken_over_too(tmp_path: Path) -> None:
    path = _staged(tmp_path)
    _left_running(path, _elsewhere()[0], status="approved")
    assert open_session(path).take_over(1, confirm=True).done
    assert _status(path) == "pending"


def test_a_dead_process_on_this_host_is_settled_without_a_takeover(tmp_path: Path) -> None:
    path = _staged(tmp_path)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        text=True,
        capture_output=True,
        check=True,
    )
    _left_running(path, f"{socket.gethostname()}:{dead.stdout.strip()}:1")
    session = open_session(path)  # recovery settles it on opening, as before
    assert _status(path) == "pending"
    with pytest.raises(NothingToDo, match="no other process runs it"):
        session.take_over(1)


def test_a_live_process_on_this_host_is_never_taken_over(tmp_path: Path) -> None:
    path = _staged(tmp_path)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        start = owner._start_time(live.pid)
        _left_running(path, f"{socket.gethostname()}:{live.pid}:{start}")
        before = path.read_bytes()
        session = open_session(path)
        for confirm in (False, True):
            with pytest.raises(UsageMistake, match="alive on this host") as info:
                session.take_over(1, confirm=confirm)
            assert "\n" not in str(info.value)
        assert path.read_bytes() == before and _status(path) == "running"
    finally:
        live.kill()
        live.wait()


def test_plan_takeover_asks_for_yes(tmp_path: Path) -> None:
    path = _staged(tmp_path)
    token, runner = _elsewhere()
    _left_running(path, token)
    session = open_session(path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        plan_verbs.run(session, "takeover 1")
    assert "Confirm with `%plan takeover 1 --yes`" in out.getvalue()
    assert _status(path) == "running"
    with pytest.raises(UsageError, match="`--force` is not `--yes`"):
        plan_verbs.run(session, "takeover 1 --force")
    with contextlib.redirect_stdout(out):
        plan_verbs.run(session, "takeover 1 --yes")
    assert f"taken over from {runner}" in out.getvalue()
    assert _status(path) == "pending"


def test_cli_takeover_needs_a_confirmation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _staged(tmp_path)
    _left_running(path, _elsewhere()[0])
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # no terminal to ask on
    assert main(["takeover", str(path), "1"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "--yes" in err and len(err.strip().splitlines()) == 1
    assert _status(path) == "running"
    assert main(["takeover", str(path), "1", "--yes"]) == EXIT_OK
    assert "pending again" in capsys.readouterr().out
    assert _status(path) == "pending"
    shown = subprocess.run(
        [sys.executable, "-m", "planbook", "show", str(path)], capture_output=True, text=True
    )
    assert "[pending]" in shown.stdout and "laptop-7" not in shown.stdout
