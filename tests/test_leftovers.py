"""The run fails when a test leaves planbook-* entries in the system temp folder (conftest.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

LEAKY = """
import tempfile
from pathlib import Path

def test_redirected_temp_is_fine():
    # tempfile follows the run's redirect: this lands under pytest's base temp
    Path(tempfile.mkdtemp(prefix="planbook-fine-"))

def test_hard_coded_system_temp_leaks():
    (Path({system!r}) / "planbook-leak").mkdir()
"""


def test_a_leftover_in_the_system_temp_folder_fails_the_run(tmp_path: Path) -> None:
    system = tmp_path / "system-tmp"
    system.mkdir()
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "conftest.py", project / "tests" / "conftest.py")
    (project / "tests" / "test_leaky.py").write_text(LEAKY.format(system=str(system)))
    env = {**os.environ, "TMPDIR": str(system), "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = result.stdout + result.stderr
    assert "2 passed" in out, out
    assert result.returncode == 1, out
    assert f"left 1 planbook-* entries in {system}: planbook-leak" in out
    left = sorted(p.name for p in system.iterdir() if not p.name.startswith("pytest-of-"))
    assert left == ["planbook-leak"]  # the redirect held: planbook-fine-* went elsewhere
