"""The `planbook` command on real notebook files; `approve` and `demo` start a real kernel."""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from planbook.documents.file import FileNotebook
from planbook.sessions.session import Session
from planbook.surfaces.cli import main as cli
from planbook.workspace.files import Workspace


def make_notebook(folder: Path, *, name: str = "analysis.ipynb") -> Path:
    nb = nbformat.v4.new_notebook()
    load = nbformat.v4.new_code_cell('x = int(open("answer.txt").read()) - 1\nx')
    load["id"] = "load"
    title = nbformat.v4.new_markdown_cell("# Analysis")
    title["id"] = "title"
    nb.cells = [title, load]
    path = folder / name
    nbformat.write(nb, path)
    (folder / "answer.txt").write_text("42\n")
    return path


def open_session(path: Path) -> Session:
    return Session(
        FileNotebook(path), Workspace(path.parent, protected=(path,)), notebook_path=path
    )


@pytest.fixture
def planned(tmp_path: Path) -> Path:
    """A notebook with four pending steps: run a new cell, edit the title, write a file, fail."""
    path = make_notebook(tmp_path)
    pb = open_session(path)
    pb.propose.insert_cell("y = x + 1\nprint(y)", after="load", reason="the answer", run=True)
    pb.propose.edit_cell("title", "# Analysis of the answer", reason="a better title")
    pb.propose.write_file("notes.txt", "x is 41\n", reason="keep a note")
    return path


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def state(path: Path) -> dict:  # type: ignore[type-arg]
    return nbformat.read(path, as_version=4).metadata["planbook"]  # type: ignore[no-any-return]


def cells(path: Path) -> dict[str, nbformat.NotebookNode]:
    return {c["id"]: c for c in nbformat.read(path, as_version=4).cells}


# --- show --------------------------------------------------------------------------------------
def test_show_prints_every_step_with_its_diff_and_changes_nothing(
    planned: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = planned.read_bytes()
    code, out, _ = run(["show", str(planned)], capsys)
    assert code == cli.EXIT_OK
    assert "1. [pending] insert code cell" in out
    assert "+y = x + 1" in out
    assert "-# Analysis\n" in out and "+# Analysis of the answer" in out
    assert "write file notes.txt" in out
    assert "\x1b[" not in out  # not a terminal: no colour
    assert planned.read_bytes() == before


def test_show_colours_diffs_on_request(planned: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["show", str(planned), "--color"], capsys)
    assert code == cli.EXIT_OK
    assert "\x1b[32m+y = x + 1\x1b[0m" in out


# --- errors, each with its exit code ----------------------------------------------------------
def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("show", "approve", "reject", "rollback", "log"):
        code, _, err = run([command, str(tmp_path / "nope.ipynb")], capsys)
        assert code == cli.EXIT_MISSING
        assert err == f"planbook: {tmp_path / 'nope.ipynb'}: no such file\n"


@pytest.mark.parametrize("content", ["this is not json", '{"cells": 3}', "[1, 2]", ""])
def test_not_a_notebook(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str) -> None:
    path = tmp_path / "x.ipynb"
    path.write_text(content)
    code, _, err = run(["show", str(path)], capsys)
    assert code == cli.EXIT_NOT_NOTEBOOK
    assert "not a Jupyter notebook" in err and err.count("\n") == 1


def test_a_folder_is_not_a_notebook(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["show", str(tmp_path)], capsys)
    assert code == cli.EXIT_NOT_NOTEBOOK
    assert "is a folder" in err


def test_notebook_without_a_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = make_notebook(tmp_path)
    for command in ("show", "approve", "reject"):
        code, _, err = run([command, str(path)], capsys)
        assert code == cli.EXIT_NOTHING
        assert "has no planbook plan" in err
    code, _, err = run(["rollback", str(path)], capsys)
    assert code == cli.EXIT_NOTHING
    assert "nothing to roll back" in err
    code, out, _ = run(["log", str(path)], capsys)
    assert code == cli.EXIT_OK and "no planbook history yet" in out


@pytest.mark.parametrize(
    "raw",
    [
        "a string",
        {"schema_version": 1, "plans": "not a list"},
        {"schema_version": 99},
    ],
)
def test_corrupted_or_future_metadata_is_refused_and_left_untouched(
    planned: Path, capsys: pytest.CaptureFixture[str], raw: object
) -> None:
    nb = nbformat.read(planned, as_version=4)
    nb.metadata["planbook"] = raw
    nbformat.write(nb, planned)
    before = planned.read_bytes()
    for argv in (["show"], ["approve"], ["reject"], ["rollback"], ["log"]):
        code, _, err = run([*argv, str(planned)], capsys)
        assert code == cli.EXIT_METADATA, argv
        assert "left untouched" in err or "left" in err
    assert planned.read_bytes() == before


@pytest.mark.parametrize("spec", ["x", "0", "99", "3-1", "1,,2", ""])
def test_bad_step_range(planned: Path, capsys: pytest.CaptureFixture[str], spec: str) -> None:
    before = planned.read_bytes()
    code, _, err = run(["approve", str(planned), "--steps", spec], capsys)
    assert code == cli.EXIT_USAGE, err
    assert err.startswith("planbook: ") and err.count("\n") == 1
    assert planned.read_bytes() == before


def test_bad_count_and_unknown_options(planned: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["approve", str(planned), "--first", "0"], capsys)[0] == cli.EXIT_USAGE
    assert run(["approve", str(planned), "--first", "9"], capsys)[0] == cli.EXIT_USAGE
    with pytest.raises(SystemExit) as exc:
        cli.main(["approve", str(planned), "--bogus"])
    assert exc.value.code == cli.EXIT_USAGE
    with pytest.raises(SystemExit) as exc:
        cli.main(["frobnicate"])
    assert exc.value.code == cli.EXIT_USAGE


def test_help_documents_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["approve", "--help"])
    out = capsys.readouterr().out
    assert "re-run" in out and "left out" in out  # what happens before approving
    for code in (cli.EXIT_MISSING, cli.EXIT_NOT_NOTEBOOK, cli.EXIT_NOTHING, cli.EXIT_METADATA):
        assert f"\n  {code} " in out


# --- approve without a kernel ------------------------------------------------------------------
def test_dry_run_starts_no_kernel_and_changes_nothing(
    planned: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = planned.read_bytes()
    code, out, _ = run(["approve", str(planned), "--dry-run"], capsys)
    assert code == cli.EXIT_OK
    assert out.splitlines() == [
        "step 1 (insert_cell): would run",
        "step 2 (edit_cell): would run",
        "step 3 (write_file): would run",
        "dry run: nothing was applied",
    ]
    assert planned.read_bytes() == before


def test_dry_run_reports_a_target_changed_since_staging(
    planned: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nb = nbformat.read(planned, as_version=4)
    next(c for c in nb.cells if c["id"] == "title")["source"] = "# Someone else's title"
    nbformat.write(nb, planned)
    code, out, _ = run(["approve", str(planned), "--steps", "2", "--dry-run"], capsys)
    assert code == cli.EXIT_FAILED
    assert "step 2 (edit_cell): would conflict" in out


def test_nothing_pending(planned: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["reject", str(planned)], capsys)[0] == cli.EXIT_OK
    code, _, err = run(["approve", str(planned)], capsys)
    assert code == cli.EXIT_NOTHING and "no step is pending" in err
    code, _, err = run(["reject", str(planned)], capsys)
    assert code == cli.EXIT_NOTHING and "nothing to reject" in err


# --- reject and rollback (no kernel needed) ----------------------------------------------------
def test_reject_some_then_all(planned: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["reject", str(planned), "--steps", "2"], capsys)
    assert (code, out) == (cli.EXIT_OK, "rejected 1 step: 2\n")
    statuses = [
        s["status"] for s in next(iter(state(planned)["plans"].values()))["revisions"][-1]["steps"]
    ]
    assert statuses == ["pending", "rejected", "pending"]
    code, out, _ = run(["reject", str(planned)], capsys)
    assert (code, out) == (cli.EXIT_OK, "rejected 2 steps: 1, 3\n")
    assert cells(planned)["title"]["source"] == "# Analysis"


def test_rollback_restores_cells_and_files_and_is_itself_undoable(
    planned: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Steps 2 and 3 need no kernel: run them in-process, then roll back from the CLI.
    report = open_session(planned).approve("2-3")
    assert report.ok
    assert (planned.parent / "notes.txt").read_text() == "x is 41\n"
    code, out, _ = run(["show", str(planned)], capsys)
    assert "checkpoints:\n1. before step 2: edit cell #1, a better title  (cp-" in out
    assert "2. before step 3: write notes.txt, keep a note  (cp-" in out
    code, out, _ = run(["rollback", str(planned)], capsys)
    assert code == cli.EXIT_OK and "rolled back 1 step (" in out
    assert not (planned.parent / "notes.txt").exists()
    assert cells(planned)["title"]["source"] == "# Analysis of the answer"
    undo = out.split("`planbook rollback ")[1].split("`")[0].split()[-1]
    code, out, _ = run(["rollback", str(planned), "1"], capsys)
    assert code == cli.EXIT_OK
    assert cells(planned)["title"]["source"] == "# Analysis"
    code, _, _ = run(["rollback", str(planned), undo], capsys)  # undo the first rollback
    assert code == cli.EXIT_OK
    assert (planned.parent / "notes.txt").read_text() == "x is 41\n"


def test_rollback_refuses_to_overwrite_a_later_change(
    planned: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert open_session(planned).approve("2-2").ok
    nb = nbformat.read(planned, as_version=4)
    next(c for c in nb.cells if c["id"] == "title")["source"] = "# Edited by hand"
    nbformat.write(nb, planned)
    code, _, err = run(["rollback", str(planned)], capsys)
    assert code == cli.EXIT_FAILED
    assert f"`planbook rollback {planned} --force`" in err
    assert cells(planned)["title"]["source"] == "# Edited by hand"
    code, _, _ = run(["rollback", str(planned), "--force"], capsys)
    assert code == cli.EXIT_OK
    assert cells(planned)["title"]["source"] == "# Analysis"


def test_rollback_unknown_checkpoint(planned: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert open_session(planned).approve("3-3").ok
    code, _, err = run(["rollback", str(planned), "cp-nope"], capsys)
    assert code == cli.EXIT_USAGE
    assert "no checkpoint 'cp-nope'" in err and f"`planbook show {planned}`" in err


# --- approve in a real kernel ------------------------------------------------------------------
@pytest.mark.kernel
def test_approve_runs_in_a_real_kernel_and_writes_outputs_and_checkpoints(planned: Path) -> None:
    # Through the installed console script, as a person or CI would call it.
    script = Path(sys.executable).parent / "planbook"
    result = subprocess.run(
        [str(script), "approve", str(planned), "--steps", "1,3"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == cli.EXIT_OK, result.stderr
    # the plan it approves is printed first (what was shown is what runs), then the report
    assert result.stdout.startswith("plan ")
    assert [line for line in result.stdout.splitlines() if line.startswith("step ")][:2] == [
        "step 1 (insert_cell): done",
        "step 3 (write_file): done",
    ]
    # The notebook's own cell ran first in the notebook's folder, so x (from answer.txt) existed.
    assert f"re-running 1 code cell of {planned} in a fresh kernel" in result.stderr
    assert "raised" not in result.stderr
    new = [c for c in cells(planned).values() if c["id"] not in ("load", "title")]
    assert new[0]["outputs"][0]["text"] == "42\n"
    assert (planned.parent / "notes.txt").read_text() == "x is 41\n"
    meta = state(planned)
    plan = next(iter(meta["plans"].values()))
    assert sum(len(b) for b in meta["checkpoints"].values()) == 2  # stored in buckets of 64
    assert plan["approvals"][0]["by"].endswith("(planbook CLI)")
    assert [s["status"] for s in plan["revisions"][-1]["steps"]] == ["done", "pending", "done"]

    log = subprocess.run(
        [str(script), "log", str(planned), "--json"], capture_output=True, text=True, check=True
    ).stdout
    rows = json.loads(log)
    approved = next(r for r in rows if r["event"] == "approved")
    assert approved["detail"].endswith("sha256=" + plan["approvals"][0]["sha256"])
    after = rows[rows.index(approved) + 1 :]
    assert [r["event"] for r in after[:2]] == ["done", "done"]
    assert "step 1 (insert_cell)" in after[0]["detail"]


@pytest.mark.kernel
def test_a_failing_step_stops_the_run_and_leaves_the_rest_pending(tmp_path: Path) -> None:
    path = make_notebook(tmp_path)
    pb = open_session(path)
    pb.propose.insert_cell("1 / 0", after="load", reason="oops", run=True)
    pb.propose.edit_cell("title", "# Never", reason="after the failure")
    result = subprocess.run(
        [sys.executable, "-m", "planbook", "approve", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == cli.EXIT_FAILED
    assert "step 1 (insert_cell): failed" in result.stdout
    assert "ZeroDivisionError" in result.stdout
    assert "1 approved step was not run and is pending again" in result.stdout
    assert cells(path)["title"]["source"] == "# Analysis"
    failed = [c for c in cells(path).values() if c["id"] not in ("load", "title")]
    assert failed[0]["outputs"][0]["ename"] == "ZeroDivisionError"


@pytest.mark.kernel
def test_demo_stages_reviews_approves_and_rolls_back(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "planbook", "demo", "--dir", "demo"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == cli.EXIT_OK, result.stderr
    out = result.stdout
    assert "1. [pending] insert code cell demo-mass after #2 load-penguins" in out
    assert "step 1 (insert_cell): done" in out and "step 2 (insert_cell): done" in out
    assert "Gentoo       5076.0" in out  # computed by a real kernel on the real data set
    assert "rolled back 1 step (" in out
    assert "approved" in out and "sha256=" in out
    copy = tmp_path / "demo" / "quickstart.ipynb"
    assert "demo-mass" in cells(copy)
    assert not (tmp_path / "demo" / "NOTES.md").exists()  # step 3 was left pending
    # Every command the demo suggests names a path that exists from where it was run.
    suggested = re.findall(r"planbook (?:rollback|show|approve) (\S+\.ipynb)", out)
    assert suggested and set(suggested) == {"demo/quickstart.ipynb"}

    # Approving the rest of the demo's plan, as the demo suggests: the quickstart's cells that
    # build on its planbook cells are left out, so nothing reads like a failure.
    result = subprocess.run(
        [sys.executable, "-m", "planbook", "approve", "demo/quickstart.ipynb"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == cli.EXIT_OK, result.stderr
    assert result.stdout.startswith("plan ")  # shown first, then approved as shown
    assert "\nstep 3 (write_file): done\n" in result.stdout
    (line,) = result.stderr.splitlines()  # one calm line, no "raised"
    assert re.fullmatch(
        r"planbook: re-running \d+ code cells? of demo/quickstart\.ipynb in a fresh kernel, so "
        r"the steps find the variables they use; left out \d+ cells that use planbook or what "
        r"only such a cell defines \(re-running them would stage steps again\); "
        r"`--no-rerun` skips this",
        line,
    ), line


@pytest.mark.kernel
def test_a_slow_notebook_cell_times_out_before_anything_is_approved(tmp_path: Path) -> None:
    path = make_notebook(tmp_path)
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("import time\ntime.sleep(120)"))
    nbformat.write(nb, path)
    open_session(path).propose.edit_cell("title", "# Later", reason="r")
    before = path.read_bytes()
    result = subprocess.run(
        [sys.executable, "-m", "planbook", "approve", str(path), "--timeout", "2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == cli.EXIT_KERNEL
    assert "did not finish within 2s" in result.stderr and "--no-rerun" in result.stderr
    assert path.read_bytes() == before


@pytest.mark.kernel
def test_ctrl_c_interrupts_the_running_step_and_leaves_the_rest_pending(tmp_path: Path) -> None:
    path = make_notebook(tmp_path)
    pb = open_session(path)
    pb.propose.insert_cell("import time\ntime.sleep(120)", after="load", run=True, reason="slow")
    pb.propose.edit_cell("title", "# Never", reason="after the slow one")
    # As a terminal starts it: a process started in the background (`pytest ... &` in a
    # script, without job control) has Ctrl-C ignored, and its children inherit that, so the
    # CLI never saw the signal and the step slept its 120 s (xdist workers where a test had
    # set a handler of their own passed: it depended on the order of the files).
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "planbook", "approve", str(path), "--no-rerun"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    finally:
        signal.signal(signal.SIGINT, before)
    try:
        # The executor saves "running" before it runs a step: wait for that, then press Ctrl-C.
        while state_of_step(path, 0) != "running":
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == cli.EXIT_INTERRUPTED, (out, err)
    assert "interrupted" in err
    assert all(line.startswith("planbook: ") for line in err.splitlines()), err
    assert state_of_step(path, 0) == "failed"
    assert state_of_step(path, 1) == "pending"
    assert cells(path)["title"]["source"] == "# Analysis"


def state_of_step(path: Path, index: int) -> str | None:
    try:
        meta = state(path)
    except Exception:  # caught mid-write by the atomic replace: read again
        return None
    return str(next(iter(meta["plans"].values()))["revisions"][-1]["steps"][index]["status"])


def test_demo_says_what_it_needs_when_the_data_set_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "palmerpenguins" else real(name, *a),
    )
    code, _, err = run(["demo", "--dir", str(tmp_path)], capsys)
    assert code == cli.EXIT_DEPENDENCY
    assert err == (
        "planbook: the demo's data set needs palmerpenguins: pip install palmerpenguins "
        "(or the planbook[examples] extra)\n"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.kernel
def test_a_cell_that_rewrites_the_plan_while_re_running_stops_the_approval(
    tmp_path: Path,
) -> None:
    path = make_notebook(tmp_path)
    nb = nbformat.read(path, as_version=4)
    # Does not say "planbook", so it is re-run; it changes the plan behind the CLI's back.
    sneaky = (
        "import json\n"
        "doc = json.load(open('analysis.ipynb'))\n"
        "doc['metadata']['plan' + 'book']['mode'] = 'act'\n"
        "json.dump(doc, open('analysis.ipynb', 'w'))"
    )
    nb.cells.append(nbformat.v4.new_code_cell(sneaky))
    nbformat.write(nb, path)
    open_session(path).propose.edit_cell("title", "# Later", reason="r")
    before = path.read_bytes()
    result = subprocess.run(
        [sys.executable, "-m", "planbook", "approve", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == cli.EXIT_FAILED
    assert "changed its plan, so nothing was approved (the file is restored)" in result.stderr
    assert path.read_bytes() == before


# --- conventions: version, closed pipes, one table of exit codes, paths to paste ---------------
ROOT = Path(__file__).resolve().parent.parent


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    import planbook

    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"planbook {planbook.__version__}\n"


def test_help_lists_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert sub.choices, "no subcommands?"
    for name in sub.choices:
        assert re.search(rf"^    {name} ", out, re.M), name
    assert "--version" in out


@pytest.mark.parametrize("argv", [["show"], ["log", "--json"]], ids=["show", "log-json"])
def test_a_closed_pipe_ends_quietly(tmp_path: Path, argv: list[str]) -> None:
    """`planbook show NB | head -2`: more output than a pipe holds, the reader leaves early."""
    path = make_notebook(tmp_path)
    pb = open_session(path)
    pb.new_plan("a long task " * 20_000)  # the log's first row alone is over 200 kB
    for n in range(3):
        pb.propose.insert_cell("x = 1\n" * 20_000, after="load", reason=f"long {n} " * 10_000)
    proc = subprocess.Popen(
        [sys.executable, "-m", "planbook", argv[0], str(path), *argv[1:]],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = os.read(proc.stdout.fileno(), 200)
    proc.stdout.close()  # what `head` does once it has its lines
    err = proc.stderr.read().decode()
    # `log` exits 141 (128 + SIGPIPE), as Unix tools do. `show` writes its text in one call,
    # and CPython may drop the part that did not fit without an error: then it exits 0.
    expected = {cli.EXIT_PIPE} if argv[0] == "log" else {cli.EXIT_OK, cli.EXIT_PIPE}
    assert proc.wait(timeout=120) in expected
    assert first.strip()
    assert err == ""  # no BrokenPipeError traceback, no "Exception ignored"


def _table(page: Path) -> dict[int, str]:
    """The exit-code table of a markdown page: | code | meaning |."""
    text = page.read_text(encoding="utf-8")
    block = text[text.index("| code | meaning |") :].split("\n\n")[0]
    rows = [line.split("|")[1:3] for line in block.splitlines()[2:]]
    return {int(code): meaning.strip() for code, meaning in rows}


@pytest.mark.parametrize("page", ["docs/cli.md", "README.md"])
def test_the_exit_code_table_is_the_one_the_command_uses(page: str) -> None:
    assert _table(ROOT / page) == dict(cli.EXIT_CODES)


def test_help_shows_every_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["show", "--help"])
    out = capsys.readouterr().out
    for code, meaning in cli.EXIT_CODES:
        assert f"\n  {code:<4} {meaning}" in out


def _two_steps_run(path: Path) -> None:
    assert open_session(path).approve("2-3").ok


#: (what is set up, the command, the exit code the table gives). Kernel trouble (7), Ctrl-C
#: (130) and closed pipes (141) have their own tests in this file.
EXIT_CASES = [
    ("planned", ["show"], cli.EXIT_OK),
    ("planned", ["approve", "--dry-run"], cli.EXIT_OK),
    ("planned", ["approve", "--steps", "9"], cli.EXIT_USAGE),
    ("planned", ["approve", "--first", "0"], cli.EXIT_USAGE),
    ("planned", ["rollback"], cli.EXIT_NOTHING),
    ("planned", ["log"], cli.EXIT_OK),
    ("planned", ["reject", "--steps", "2"], cli.EXIT_OK),
    ("ran", ["rollback", "cp-nope"], cli.EXIT_USAGE),
    ("ran", ["rollback"], cli.EXIT_OK),
    ("ran twice back", ["rollback"], cli.EXIT_NOTHING),
    ("drifted", ["approve", "--steps", "2", "--dry-run"], cli.EXIT_FAILED),
    ("edited after run", ["rollback"], cli.EXIT_FAILED),
    ("all rejected", ["approve"], cli.EXIT_NOTHING),
    ("all rejected", ["reject"], cli.EXIT_NOTHING),
    ("no plan", ["show"], cli.EXIT_NOTHING),
    ("no plan", ["rollback"], cli.EXIT_NOTHING),
    ("missing", ["show"], cli.EXIT_MISSING),
    ("not json", ["log"], cli.EXIT_NOT_NOTEBOOK),
    ("future metadata", ["show"], cli.EXIT_METADATA),
]


@pytest.mark.parametrize(
    ("setup", "argv", "expected"), EXIT_CASES, ids=[f"{c[0]}-{' '.join(c[1])}" for c in EXIT_CASES]
)
def test_exit_codes_command_by_command(
    planned: Path,
    capsys: pytest.CaptureFixture[str],
    setup: str,
    argv: list[str],
    expected: int,
) -> None:
    path = planned
    if setup in ("ran", "ran twice back", "edited after run"):
        _two_steps_run(path)
    if setup == "ran twice back":
        assert run(["rollback", str(path)], capsys)[0] == cli.EXIT_OK
        assert run(["rollback", str(path)], capsys)[0] == cli.EXIT_OK
    elif setup == "edited after run":
        (path.parent / "notes.txt").write_text("edited by hand\n")
    elif setup == "drifted":
        nb = nbformat.read(path, as_version=4)
        next(c for c in nb.cells if c["id"] == "title")["source"] = "# By hand"
        nbformat.write(nb, path)
    elif setup == "all rejected":
        assert run(["reject", str(path)], capsys)[0] == cli.EXIT_OK
    elif setup == "no plan":
        path = make_notebook(path.parent, name="plain.ipynb")
    elif setup == "missing":
        path = path.parent / "missing.ipynb"
    elif setup == "not json":
        path.write_text("{")
    elif setup == "future metadata":
        nb = nbformat.read(path, as_version=4)
        nb.metadata["planbook"] = {"schema_version": 99}
        nbformat.write(nb, path)
    code, _, err = run([argv[0], str(path), *argv[1:]], capsys)
    assert code == expected, err
    if err:  # (a dry run reports a conflict on stdout, with the other steps)
        assert err.startswith("planbook: ") and err.count("\n") == 1, err


def test_every_documented_code_is_exercised() -> None:
    # A read-only folder (8) is tested in tests/surfaces/test_cli_refusals.py, a missing
    # package (9) by the demo's test above and in tests/surfaces/test_cli_mcp.py.
    own_tests = {cli.EXIT_KERNEL, cli.EXIT_INTERRUPTED, cli.EXIT_PIPE, cli.EXIT_UNWRITABLE}
    tested = {c[2] for c in EXIT_CASES} | own_tests | {cli.EXIT_DEPENDENCY}
    assert tested == {code for code, _ in cli.EXIT_CODES}


def test_messages_name_paths_that_work_from_the_current_folder(
    planned: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _two_steps_run(planned)
    monkeypatch.chdir(planned.parent.parent)
    relative = f"{planned.parent.name}/{planned.name}"
    code, out, _ = run(["rollback", relative], capsys)
    assert code == cli.EXIT_OK
    suggested = out.split("`planbook rollback ")[1].split()[0]
    assert suggested == relative and Path(suggested).exists()
    # From a folder beside it, the absolute path; a name with a space comes quoted for the shell.
    spaced = planned.parent / "my notebook.ipynb"
    planned.rename(spaced)
    (planned.parent / "elsewhere").mkdir()
    monkeypatch.chdir(planned.parent / "elsewhere")
    code, _, err = run(["rollback", str(spaced), "cp-nope"], capsys)
    assert code == cli.EXIT_USAGE
    assert f"`planbook show '{spaced}'`" in err


def test_the_nothing_to_roll_back_message_and_code(
    planned: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _two_steps_run(planned)
    assert run(["rollback", str(planned)], capsys)[0] == cli.EXIT_OK
    assert run(["rollback", str(planned)], capsys)[0] == cli.EXIT_OK
    before = planned.read_bytes()
    code, _, err = run(["rollback", str(planned)], capsys)
    assert code == cli.EXIT_NOTHING
    assert err == "planbook: nothing to roll back: no step has run since the last rollback\n"
    assert planned.read_bytes() == before


@pytest.mark.kernel
def test_approve_leaves_out_cells_that_build_on_planbook_cells(tmp_path: Path) -> None:
    path = make_notebook(tmp_path)
    nb = nbformat.read(path, as_version=4)
    setup = nbformat.v4.new_code_cell("import planbook\npb = planbook.session()\nfolder = '.'")
    uses = nbformat.v4.new_code_cell("print(pb.cells(), folder)")
    broken = nbformat.v4.new_code_cell("1 / 0")
    for cell, cell_id in ((setup, "setup"), (uses, "uses"), (broken, "broken")):
        cell["id"] = cell_id
    nb.cells += [setup, uses, broken]
    nbformat.write(nb, path)
    open_session(path).propose.edit_cell("title", "# Later", reason="r")
    result = subprocess.run(
        [sys.executable, "-m", "planbook", "approve", path.name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == cli.EXIT_OK, result.stderr
    assert result.stderr.splitlines() == [
        "planbook: re-running 2 code cells of analysis.ipynb in a fresh kernel, so the steps find "
        "the variables they use; left out 2 cells that use planbook or what only such a cell "
        "defines (re-running them would stage steps again); `--no-rerun` skips this",
        "planbook: cell broken raised ZeroDivisionError: division by zero (approving anyway: a "
        "step that uses what it defines will fail and stop the run)",
    ]


def _imported(stderr: str) -> set[str]:
    """The modules a ``python -X importtime`` run imported, from its report on stderr."""
    return {
        line.rsplit("|", 1)[1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def test_the_command_reads_a_notebook_without_building_the_iri_parsers(planned: Path) -> None:
    """jsonschema, which nbformat imports, imports rfc3987_syntax whenever it is installed (as
    it is wherever JupyterLab is), and that built 35 parsers nothing uses: 2.4 s of the 3.4 s
    `planbook show` took to start. The command goes without it; nothing it prints changes."""
    import importlib.util

    assert importlib.util.find_spec("rfc3987_syntax"), "JupyterLab's jsonschema extra is absent"
    shown = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "planbook", "show", str(planned)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "# Analysis of the answer" in shown.stdout
    imported = _imported(shown.stderr)
    assert {"nbformat", "jsonschema"} <= imported  # it read the notebook as nbformat does
    # (a blocked import is reported too, as a line of its own: what shows it did not load is
    # that nothing under it did)
    assert not {name for name in imported if name.startswith(("rfc3987_syntax.", "lark"))}
    # In a process that only loads planbook (a kernel, a server), nothing is taken away.
    code = (
        "import sys, planbook.surfaces.cli.main as m; m.main(['show', sys.argv[1]]); "
        "print('missing:', sorted(k for k, v in sys.modules.items() if v is None))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code, str(planned)], capture_output=True, text=True, timeout=60
    )
    (missing,) = [line for line in loaded.stdout.splitlines() if line.startswith("missing:")]
    assert "rfc3987_syntax" not in missing, loaded.stdout + loaded.stderr
