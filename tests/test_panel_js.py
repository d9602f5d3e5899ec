"""The panel's front-end suites, run from pytest so one `pytest` covers them: node's test runner
over js/tests (rendering and interactions in happy-dom) and the JSDoc type check.

Needs Node with the dev dependencies installed (`npm ci`); a missing Node fails, never skips.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _npm(*args: str) -> subprocess.CompletedProcess[str]:
    npm = shutil.which("npm")
    assert npm, "npm is needed for the panel's JS tests: install Node.js 20+, then `npm ci`"
    assert (ROOT / "node_modules" / "happy-dom").is_dir(), "run `npm ci` first"
    return subprocess.run(
        [npm, *args], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )


def test_the_js_suite_passes() -> None:
    done = _npm("test")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "# fail 0" in done.stdout


def test_the_js_modules_type_check() -> None:
    done = _npm("run", "typecheck")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
