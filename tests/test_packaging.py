"""What `pip install planbook` gets: the code, the panel's front end, the quickstart and the
LICENSE; no test files. (.ci/run also installs the wheel in a fresh venv and runs the demo.)"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PIP_WHEEL = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]


def test_the_wheel_ships_the_license_and_no_tests(tmp_path: Path) -> None:
    built = subprocess.run(
        [*PIP_WHEEL, "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
        # Without the build hooks: the JupyterLab extension's npm build is not what this checks
        # (it needs Node and a network), and .ci/run builds the whole wheel.
        env={**os.environ, "HATCH_BUILD_NO_HOOKS": "true"},
    )
    assert built.returncode == 0, f"pip wheel failed:\n{built.stdout[-2000:]}{built.stderr[-3000:]}"
    (wheel,) = tmp_path.glob("planbook-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert [n for n in names if "/tests/" in n or n.startswith("tests/")] == []
    license_text = next(
        zipfile.ZipFile(wheel).read(n) for n in names if n.endswith("licenses/LICENSE")
    )
    assert license_text.startswith(b"MIT License") and b"planbook contributors" in license_text
    assert "planbook/_js/panel.js" in names and "planbook/_js/panel.css" in names
    assert "planbook/_notebooks/quickstart.ipynb" in names
    assert "planbook/py.typed" in names
