"""What a person at the `planbook` command meets when a request cannot be done as asked: a
count under 1 for gc, a rollback after gc, two step selections at once, a read-only folder,
a bad step spec, a conflict. Each is one line on stderr starting with `planbook:`, in the
command's own words, with the exit code docs/cli.md gives, and the notebook left as it was.

Each case runs `python -m planbook` in a subprocess, as a shell or CI meets it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from planbook.sessions.open_file import editing_session
from planbook.surfaces.cli import main as cli
from tests.support.engine import write_notebook


def make_planned(folder: Path) -> Path:
    """analysis.ipynb (cells c1, c2) with three pending steps: edit c1, write notes.txt,
    edit c2; none needs a kernel."""
    path = write_notebook(folder / "analysis.ipynb", ["# Analysis", "x = 41"])
    pb = editing_session(path, "a test")
    pb.propose.edit_cell("c1", "# Analysis of x", reason="a better title")
    pb.propose.write_file("notes.txt", "x is 41\n", reason="keep a note")
    pb.propose.edit_cell("c2", "x = 42", reason="the right answer")
    return path


@pytest.fixture
def planned(tmp_path: Path) -> Path:
    return make_planned(tmp_path)


@pytest.fixture
def ran(planned: Path) -> Path:
    """Steps 1 and 2 done, each behind a checkpoint; step 3 pending."""
    assert editing_session(planned, "a test").approve("1-2").ok
    return planned


def planbook(
    *argv: str, cwd: Path, prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, sys.executable, "-m", "planbook", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def refused(result: subprocess.CompletedProcess[str], code: int, shown: str = "") -> str:
    """The one line a refusal prints, after checking its exit code and that nothing else
    was printed but ``shown``: the start of what the command shows before it acts (`approve`
    prints the plan it approves, `rollback` what it writes)."""
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert result.stdout.startswith(shown) if shown else result.stdout == ""
    assert result.stderr.startswith("planbook: ") and result.stderr.count("\n") == 1
    return result.stderr.removeprefix("planbook: ").rstrip("\n")


def checkpoints(path: Path) -> int:
    meta = nbformat.read(path, as_version=4).metadata["planbook"]
    return sum(len(bucket) for bucket in meta["checkpoints"].values())


# --- gc: a count under 1 -----------------------------------------------------------------------
def test_gc_refuses_a_count_under_one_and_keeps_every_checkpoint(ran: Path) -> None:
    before = ran.read_bytes()
    for argv in (["--keep", "-3"], ["--keep", "0"], ["--keep-plans", "0"]):
        line = refused(planbook("gc", ran.name, *argv, cwd=ran.parent), cli.EXIT_USAGE)
        assert line == (
            f"{' '.join(argv)}: give a count of 1 or more "
            "(`planbook strip` removes all of planbook's metadata)"
        )
    assert ran.read_bytes() == before and checkpoints(ran) == 2


def test_gc_keeping_one_checkpoint_leaves_the_last_step_undoable(ran: Path) -> None:
    kept = planbook("gc", ran.name, "--keep", "1", cwd=ran.parent)
    assert kept.returncode == cli.EXIT_OK, kept.stderr
    assert checkpoints(ran) == 1
    back = planbook("rollback", ran.name, cwd=ran.parent)
    assert back.returncode == cli.EXIT_OK, back.stderr
    assert not (ran.parent / "notes.txt").exists()


def test_rollback_after_gc_removed_every_checkpoint_says_so(ran: Path) -> None:
    # What `gc --keep -3` of an earlier planbook left: steps done, no checkpoint, no blob.
    nb = nbformat.read(ran, as_version=4)
    nb.metadata["planbook"]["checkpoints"] = {}
    nb.metadata["planbook"]["blobs"] = {}
    nbformat.write(nb, ran)
    before = ran.read_bytes()
    line = refused(planbook("rollback", ran.name, cwd=ran.parent), cli.EXIT_NOTHING)
    assert line == (
        "analysis.ipynb: nothing to roll back: no checkpoint is left to roll back to "
        "(gc removed them)"
    )
    assert ran.read_bytes() == before


# --- approve: the selection --------------------------------------------------------------------
def test_steps_and_first_together_are_refused_and_nothing_runs(planned: Path) -> None:
    before = planned.read_bytes()
    line = refused(
        planbook("approve", planned.name, "--steps", "3", "--first", "1", cwd=planned.parent),
        cli.EXIT_USAGE,
    )
    assert line == (
        "--steps 3 and --first 1 both choose steps: give one of them (--steps names steps by "
        "number, --first counts pending steps from the top)"
    )
    assert planned.read_bytes() == before


def test_a_bad_step_spec_names_the_commands_option(planned: Path) -> None:
    line = refused(
        planbook("approve", planned.name, "--steps", "abc", cwd=planned.parent), cli.EXIT_USAGE
    )
    assert line == (
        "`abc` is not a step number or range: use 4 (step 4), 1,3-5, `--first N` for the "
        "first N pending, or nothing for all"
    )


def test_a_conflict_says_what_the_command_can_do(planned: Path) -> None:
    nb = nbformat.read(planned, as_version=4)
    nb.cells[0]["source"] = "# Someone else's title"
    nbformat.write(nb, planned)
    result = planbook("approve", planned.name, "--steps", "1", "--dry-run", cwd=planned.parent)
    assert result.returncode == cli.EXIT_FAILED, result.stderr
    assert result.stdout.splitlines() == [
        "step 1 (edit_cell): would conflict: cell 'c1' changed after the step was staged; "
        "nothing was applied: reject this step (`planbook reject analysis.ipynb --steps N`) "
        "and propose it again, or revise it in Jupyter (`%plan revise`) and approve it then",
        "dry run: nothing was applied",
    ]


@pytest.mark.kernel
def test_a_conflict_found_in_the_kernel_is_said_in_the_commands_words(planned: Path) -> None:
    nb = nbformat.read(planned, as_version=4)
    nb.cells[1]["source"] = "x = 40"  # c2 edited by hand after step 3 was staged
    nbformat.write(nb, planned)
    result = planbook("approve", planned.name, "--steps", "3", "--no-rerun", cwd=planned.parent)
    assert result.returncode == cli.EXIT_FAILED, result.stderr
    # the plan as approved is printed first; then what the run did
    reported = result.stdout.split("\n\n")[-1].splitlines()
    assert reported[-1] == (
        "step 3 (edit_cell): conflict: cell 'c2' changed after the step was staged; nothing "
        "was applied: reject this step (`planbook reject analysis.ipynb --steps N`) and "
        "propose it again, or revise it in Jupyter (`%plan revise`) and approve it then"
    )
    assert nbformat.read(planned, as_version=4).cells[1]["source"] == "x = 40"


# --- a read-only folder ------------------------------------------------------------------------
def _read_only_mount() -> tuple[str, ...] | None:
    """bubblewrap binding the notebook's folder read-only over the real file system (as a
    read-only share or mount looks to the command), or None where bwrap cannot do that."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return None
    probe = subprocess.run(
        [bwrap, "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "true"],
        capture_output=True,
    )
    return (
        (bwrap, "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc")
        if not probe.returncode
        else None
    )


READ_ONLY = _read_only_mount()


@pytest.mark.skipif(READ_ONLY is None, reason="bubblewrap cannot bind a folder read-only here")
@pytest.mark.parametrize(
    "argv",
    [
        ["strip"],
        ["reject"],
        ["rollback"],
        ["gc", "--keep", "1"],
        ["approve", "--steps", "3", "--no-rerun"],
    ],
    ids=" ".join,
)
def test_a_read_only_folder_is_one_line_and_its_own_exit_code(ran: Path, argv: list[str]) -> None:
    assert READ_ONLY is not None
    folder = str(ran.parent)
    before = ran.read_bytes()
    result = planbook(
        argv[0],
        ran.name,
        *argv[1:],
        cwd=ran.parent,
        prefix=(*READ_ONLY, "--ro-bind", folder, folder),
    )
    shown = {"approve": "plan ", "rollback": "rollback writes: file 'notes.txt'\n"}
    line = refused(result, cli.EXIT_UNWRITABLE, shown.get(argv[0], ""))
    # rollback puts notes.txt back first (step 2 wrote it): that is the write refused
    written = "notes.txt" if argv[0] == "rollback" else "analysis.ipynb"
    assert line == f"cannot write {written}: read-only folder; nothing was changed"
    assert ran.read_bytes() == before
