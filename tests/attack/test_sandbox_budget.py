"""One budget for a whole sandboxed command: memory and processes, kept by the kernel.

A pipeline of allowed programs must not use N times the per-process limit, and a fork bomb is
stopped; the test process and the machine go on as before."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from planbook.workspace.budget import Budget, make_cgroup
from planbook.workspace.sandbox import probe, run_sandboxed
from tests.attack.sandbox_users import can_drop_to_nobody, run_as_nobody

pytestmark = pytest.mark.skipif(not probe().available, reason=probe().reason)
_CGROUP = make_cgroup(Budget())
CGROUP_WHY = "" if _CGROUP is not None else "no cgroup can be made by this process here"
if _CGROUP is not None:
    _CGROUP.close()
needs_cgroup = pytest.mark.skipif(bool(CGROUP_WHY), reason=CGROUP_WHY or "-")
NOBODY_WHY = can_drop_to_nobody()

SMALL = Budget(memory=256 * 1024 * 1024, processes=32)
FOUR_SORTS = "sort big.txt | sort big.txt - | sort big.txt - | sort big.txt - | wc -l"


@pytest.fixture(scope="module")
def ws() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="planbook-budget-", dir="/tmp"))
    root.chmod(0o755)
    line = b"abcdefghijklmnopqrstuvwxyz0123456789\n"
    (root / "big.txt").write_bytes(line * (80 * 1024 * 1024 // len(line)))  # 80 MiB
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _left_with(mark: str) -> list[str]:
    """Processes on the machine whose command line holds ``mark``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            line = (proc / "cmdline").read_bytes() if proc.name.isdigit() else b""
        except OSError:
            continue
        if mark.encode() in line:
            found.append(proc.name)
    return found


@needs_cgroup
def test_one_sort_fits_the_budget(ws: Path) -> None:
    result = run_sandboxed("sort big.txt | wc -l", ws, timeout=120, budget=SMALL)
    assert result.returncode == 0 and result.stdout.strip() == str(80 * 1024 * 1024 // 37)


@needs_cgroup
def test_four_sorts_in_a_pipeline_share_one_memory_budget(ws: Path) -> None:
    result = run_sandboxed(FOUR_SORTS, ws, timeout=120, budget=SMALL)
    first = result.stderr.splitlines()[0]
    assert first == (
        "[the command exceeded its memory budget (256 MiB for all its processes together): "
        "the sandbox stopped it]"
    )
    assert result.returncode is None
    assert subprocess.run(["true"]).returncode == 0  # the test process is unaffected


@needs_cgroup
@pytest.mark.parametrize(
    "attack",
    [
        "yes | " + " | ".join(["cat"] * 100) + " | head -1",  # allowed programs only
        "f(){ f | f & }; f; sleep 3",  # the classic, with the classifier skipped
        "for i in $(seq 200); do sleep 30 & done; wait",
    ],
    ids=["pipeline-of-cat", "fork-bomb", "sleepers"],
)
def test_a_process_count_attack_is_stopped(ws: Path, attack: str) -> None:
    mark = f"bomb-{os.getpid()}"  # in every sh's command line inside: `sh -c COMMAND`
    result = run_sandboxed(f"{attack} # {mark}", ws, timeout=60, budget=SMALL)
    assert result.stderr.splitlines()[0] == (
        "[the command exceeded its budget of 32 processes: the sandbox refused to start more]"
    )
    assert result.seconds < 30
    assert _left_with(mark) == []  # nothing left behind on the machine
    assert subprocess.run(["true"]).returncode == 0


@needs_cgroup
def test_the_default_budget_is_one_cgroup_per_command(ws: Path) -> None:
    result = run_sandboxed("cat /proc/self/cgroup; ulimit -a", ws, timeout=30)
    assert result.returncode == 0 and "process              64" in result.stdout
    leftovers = [p for p in Path("/sys/fs/cgroup").rglob(f"planbook-{os.getpid()}-*")]
    assert leftovers == []  # removed after the command


@pytest.mark.skipif(bool(NOBODY_WHY), reason=NOBODY_WHY or "-")
def test_without_a_cgroup_an_ordinary_user_is_held_by_rlimit_nproc(ws: Path) -> None:
    # nobody cannot make a cgroup here; RLIMIT_NPROC in the sandbox's own user namespace
    # counts only the command's processes.
    mark = f"nproc-{os.getpid()}"
    result = run_as_nobody("yes | " + " | ".join(["cat"] * 100) + f" | head -1 # {mark}", ws)
    assert "Cannot fork" in result.stderr
    assert result.stdout == ""
    assert _left_with(mark) == []
    fine = run_as_nobody("ls | head -3; echo ok", ws)
    assert fine.stdout.splitlines() == ["big.txt", "ok"]
