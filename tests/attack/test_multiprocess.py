"""Several real processes approving on one notebook file at the same moment.

Each trial stages a plan in a fresh notebook, then separate Python processes (spawned, each
with its own planbook) open sessions on it, meet at a barrier and approve together. Counted:
lost updates (an approval, checkpoint, cell edit or file missing afterwards) and double runs
(a shell step appending to a file more than once).
"""

from __future__ import annotations

import itertools
import json
import multiprocessing
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.attack.mp_workers import approve_each, open_session
from tests.conftest import make_notebook

TRIALS = 20


def _run_workers(jobs_per_worker: list[list[tuple[str, str]]]) -> list[tuple[str, ...]]:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(len(jobs_per_worker))
    results = ctx.Queue()
    procs = [
        ctx.Process(target=approve_each, args=(jobs, barrier, results)) for jobs in jobs_per_worker
    ]
    for proc in procs:
        proc.start()
    expected = sum(len(jobs) for jobs in jobs_per_worker)
    out = [results.get(timeout=120) for _ in range(expected)]
    for proc in procs:
        proc.join(timeout=60)
        assert proc.exitcode == 0
    return out


def _staged_notebook(folder: Path) -> Path:
    folder.mkdir()
    path = make_notebook(folder / "nb.ipynb", ["a = 1", "b = 2", "c = 3"])
    session = open_session(path)
    session.propose.edit_cell("c1", "a = 10", reason="a")
    session.propose.edit_cell("c2", "b = 20", reason="b")
    session.propose.write_file("out.txt", "written\n", reason="file")
    session.propose.shell("echo ran >> runs.log", reason="count the runs")
    session.close()
    return path


def saved(nb: nbformat.NotebookNode) -> dict[str, Any]:
    """The saved planbook state with plans, checkpoints and log as lists (the stored layout
    keeps them by id, see planbook/engine/store.py)."""
    from planbook.engine.stored_record import from_layout

    return from_layout(json.loads(json.dumps(nb.metadata.get("planbook", {}))))


def test_different_steps_approved_at_once_lose_nothing(tmp_path: Path) -> None:
    paths = [_staged_notebook(tmp_path / f"t{i}") for i in range(TRIALS)]
    results = _run_workers(
        [[(str(p), spec) for p in paths] for spec in ("1-1", "2-2", "3-3", "4-4")]
    )
    assert [r for r in results if r[2] != "ran"] == []
    lost = 0
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        state = saved(nb)
        plan = state["plans"][0]
        steps = plan["revisions"][-1]["steps"]
        ok = (
            [c.source for c in nb.cells] == ["a = 10", "b = 20", "c = 3"]
            and (path.parent / "out.txt").read_text() == "written\n"
            and (path.parent / "runs.log").read_text() == "ran\n"
            and [s["status"] for s in steps] == ["done"] * 4
            and len(plan["approvals"]) == 4
            and len(state["checkpoints"]) == 4
            and plan["state"] == "completed"
        )
        lost += not ok
        assert not [p for p in path.parent.iterdir() if p.name.endswith("planbook-lock")]
    assert lost == 0, f"{lost} of {TRIALS} trials lost an update"


def test_the_same_step_approved_by_several_processes_runs_once(tmp_path: Path) -> None:
    paths = [_staged_notebook(tmp_path / f"t{i}") for i in range(TRIALS)]
    results = _run_workers([[(str(p), "4-4") for p in paths] for _ in range(3)])
    assert [r for r in results if r[2] == "raw"] == []
    double = sum((p.parent / "runs.log").read_text().count("ran") != 1 for p in paths)
    assert double == 0, f"the step ran more than once in {double} of {TRIALS} trials"
    for path in paths:
        mine = [r for r in results if r[0] == str(path)]
        assert sorted(r[2] for r in mine) == ["ran", "refused", "refused"]
        for refusal in (r[4] for r in mine if r[2] == "refused"):
            assert "\n" not in refusal
            assert "done" in refusal or "running" in refusal or "approved" in refusal, refusal
        steps = saved(nbformat.read(path, as_version=4))["plans"][0]["revisions"]
        assert [s["status"] for s in steps[-1]["steps"]][3] == "done"


def test_a_run_left_by_a_dead_process_is_recovered_but_a_live_one_is_not_taken(
    tmp_path: Path,
) -> None:
    (tmp_path / "t").mkdir()
    path = make_notebook(tmp_path / "t" / "nb.ipynb", ["a = 1"])
    ctx = multiprocessing.get_context("spawn")
    # A process that approves the shell step and is killed while the command runs.
    session = open_session(path)
    session.propose.edit_cell("c1", "a = 10", reason="a")
    for n in range(4):
        session.propose.write_file(f"x{n}.txt", "x", reason="filler")
    session.propose.shell("sleep 8", reason="slow")
    session.close()
    barrier, results = ctx.Barrier(1), ctx.Queue()
    proc = ctx.Process(target=approve_each, args=([(str(path), "6-6")], barrier, results))
    proc.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        nb = nbformat.read(path, as_version=4)
        steps = (saved(nb).get("plans") or [{}])[0].get("revisions", [{}])
        if steps and steps[-1]["steps"][5]["status"] == "running":
            break
        time.sleep(0.05)
    # While it lives, another session sees the step running there and does not take it.
    other = open_session(path)
    assert other.recovered == []
    with pytest.raises(Exception, match=r"running in process \d+"):
        other.approve("6-6")
    proc.kill()
    proc.join()
    # Once it is dead, the next transaction settles the cut-off run and the plan moves on.
    report = other.approve("1-1")
    assert report.ok
    statuses = [s.status for s in other.current_plan().steps]
    assert statuses[0] == "done" and statuses[5] == "failed"
    assert other.current_plan().state != "executing"


def _cli(path: Path, steps: str) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / "planbook"
    return subprocess.run(
        [str(script), "approve", str(path), "--steps", steps, "--no-rerun"],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.kernel
def test_a_kernel_and_the_cli_approving_at_once(tmp_path: Path) -> None:
    """The kernel runs a slow step; meanwhile the CLI approves other steps (they run too) or the
    same one (refused in one line: it is running in the kernel's process)."""
    from tests.kernel_helper import kernel

    trials = 1  # each CLI approve starts its own kernel: seconds apiece on a shared machine
    with kernel(tmp_path) as k:
        for n in range(trials):
            folder = tmp_path / f"t{n}"
            folder.mkdir()
            path = make_notebook(folder / "nb.ipynb", ["a = 1", "b = 2"])
            session = open_session(path)
            # The signal lives outside the workspace: a command in an overlay sees the
            # workspace as it was when it started (docs/what-it-cannot-do.md)
            release = tmp_path / f"release{n}"
            session.propose.shell(
                f"until [ -e {release} ]; do sleep 0.05; done; echo kernel >> runs.log",
                reason="runs until the test releases it",
            )
            session.propose.edit_cell("c1", "a = 10", reason="edit")
            session.propose.write_file("cli.txt", "cli\n", reason="cli")
            session.close()
            k.kc.execute(
                "import planbook\n"
                f"_s = planbook.session(notebook={str(path)!r}, fresh=True, live=False)\n"
                "print(_s.approve('1-1'))"
            )
            deadline = time.monotonic() + 60
            while not (folder / "runs.log").exists() and time.monotonic() < deadline:
                steps = saved(nbformat.read(path, as_version=4))["plans"][0]
                if steps["revisions"][-1]["steps"][0]["status"] == "running":
                    break
                time.sleep(0.05)
            same = _cli(path, "1")
            other = _cli(path, "2-3")
            release.touch()
            k.run("pass")  # waits for the kernel's approve to finish
            assert same.returncode != 0
            assert "running in process" in same.stderr and same.stderr.count("\n") == 1
            assert other.returncode == 0, other.stderr
            assert (folder / "runs.log").read_text() == "kernel\n"
            assert (folder / "cli.txt").read_text() == "cli\n"
            nb = nbformat.read(path, as_version=4)
            plan = saved(nb)["plans"][0]
            assert [c.source for c in nb.cells] == ["a = 10", "b = 2"]
            assert [s["status"] for s in plan["revisions"][-1]["steps"]] == ["done"] * 3
            assert len(plan["approvals"]) == 2 and plan["state"] == "completed"
            assert len(saved(nb)["checkpoints"]) == 3


# --- the lock under a cleanup ---------------------------------------------------------------
_LOCKER = """
import random, sys, time
from pathlib import Path
from planbook.documents.lock import notebook_lock
nb, rounds, hold = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
lock = notebook_lock(nb)
print("ready", flush=True)
sys.stdin.readline()
for _ in range(rounds):
    with lock.hold(wait=60):
        start = time.monotonic_ns()
        print("held", flush=True)
        time.sleep(hold if hold else random.uniform(0, 0.004))
        end = time.monotonic_ns()
    print(start, end, flush=True)
"""


def _git_folder(folder: Path) -> Path:
    folder.mkdir()
    nb = make_notebook(folder / "nb.ipynb", ["a = 1"])
    # What a project ignores, and so what `git clean -X` deletes: hidden files, lock files.
    (folder / ".gitignore").write_text(".*\n!.gitignore\n*-lock\n*.lock\n")
    for args in (["init", "-q"], ["add", "nb.ipynb", ".gitignore"]):
        subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True)
    return nb


def _locker(nb: Path, rounds: int, hold: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _LOCKER, str(nb), str(rounds), str(hold)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    return proc


def _go(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.write("go\n")
    proc.stdin.flush()


def _intervals(proc: subprocess.Popen[str]) -> list[tuple[int, int]]:
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0
    return [(int(a), int(b)) for a, b in (line.split() for line in out.splitlines() if " " in line)]


def _clean(folder: Path) -> None:
    """`git clean -fdX`, and whatever it left that is not the notebook, deleted by hand."""
    subprocess.run(["git", "clean", "-fdqX"], cwd=folder, check=True, capture_output=True)
    for path in folder.iterdir():
        if path.name not in ("nb.ipynb", ".git", ".gitignore") and not path.is_dir():
            path.unlink(missing_ok=True)


def test_a_cleanup_while_one_process_holds_the_lock_lets_no_second_one_in(
    tmp_path: Path,
) -> None:
    for trial in range(5):
        nb = _git_folder(tmp_path / f"t{trial}")
        holder = _locker(nb, 1, 0.4)
        _go(holder)
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        _clean(nb.parent)  # the cleanup runs while the holder holds
        second = _locker(nb, 1, 0.0)
        _go(second)
        [(_, released)] = _intervals(holder)
        [(entered, _)] = _intervals(second)
        assert entered >= released, f"trial {trial}: the second process entered while held"


def test_three_processes_and_a_cleanup_loop_never_overlap(tmp_path: Path) -> None:
    nb = _git_folder(tmp_path / "t")
    procs = [_locker(nb, 60, 0.0) for _ in range(3)]
    for proc in procs:
        _go(proc)
    cleanups = 0
    while any(proc.poll() is None for proc in procs) and cleanups < 400:
        _clean(nb.parent)
        cleanups += 1
    spans = sorted(span for proc in procs for span in _intervals(proc))
    assert len(spans) == 180
    overlaps = sum(later[0] < earlier[1] for earlier, later in itertools.pairwise(spans))
    assert overlaps == 0, f"{overlaps} of {len(spans)} holds overlapped ({cleanups} cleanups)"
