"""The panel's JavaScript unit tests (node's test runner), run as part of the one test command."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_js_unit_tests_pass() -> None:
    npm = shutil.which("npm")
    assert npm is not None, "npm is needed for the panel's JS tests: install Node.js 20+"
    if not (ROOT / "node_modules").exists():
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=ROOT, check=True)
    result = subprocess.run([npm, "test"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "# fail 0" in result.stdout and "# pass 0" not in result.stdout
