"""What `pip install planbook` gets: the code, the panel's front end, the quickstart and the
LICENSE; no test files; the in-cell review extension built from its sources as they are, never
one left from an earlier build, and an sdist that installs without Node. (.ci/run also installs
the wheel in a fresh venv and runs the demo.)"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import uuid
import zipfile
from pathlib import Path

import pytest

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


# --- the in-cell review extension in the wheel ------------------------------------------------
#: What a wheel build reads from the checkout (pyproject's include, force-include, shared-data).
BUILD_INPUTS = [
    "pyproject.toml",
    ".gitignore",
    "README.md",
    "LICENSE",
    "planbook",
    "js",
    "jupyter-config",
]
EXTENSION = "planbook-0.1.0.data/data/share/jupyter/labextensions/planbook/"
LABEXTENSION = ROOT / "js" / "labextension"
#: A string of the extension's TypeScript that survives minification (a command id).
COMMAND_ID = "'planbook:next-change'"


def source_copy(folder: Path) -> Path:
    """The files a build reads, copied (the test edits a TypeScript source: never the real
    one); the extension's installed npm packages are shared by a link, only read."""
    copy = folder / "src"
    ignore = shutil.ignore_patterns("node_modules", "__pycache__", "lib", "labextension")
    for name in BUILD_INPUTS:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=ignore)
        else:
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name)
    # (the ignore above dropped the extension's folder with the built one: bring its sources)
    shutil.copytree(
        LABEXTENSION,
        copy / "js" / "labextension",
        ignore=shutil.ignore_patterns("node_modules", "lib", "tsconfig.tsbuildinfo"),
    )
    (copy / "notebooks").mkdir()
    shutil.copy2(ROOT / "notebooks" / "quickstart.ipynb", copy / "notebooks")
    return copy


def wheel_build(
    source: Path, out: Path, *, path: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "HATCH_BUILD_NO_HOOKS"}
    if path is not None:
        env["PATH"] = path
    return subprocess.run(
        [*PIP_WHEEL, "-w", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )


def extension_text(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as zf:
        return "\n".join(
            zf.read(n).decode("utf-8", "replace")
            for n in zf.namelist()
            if n.startswith(EXTENSION) and n.endswith(".js")
        )


#: PATH with the interpreter's folder only: no Node, no npm.
WITHOUT_NODE = str(Path(sys.executable).parent)


def test_a_wheel_without_node_is_refused_not_shipped_stale(tmp_path: Path) -> None:
    copy = source_copy(tmp_path)
    stale = copy / "planbook" / "labextension"
    (stale / "static").mkdir(parents=True)
    (stale / "package.json").write_text("{}")
    (stale / "static" / "style.js").write_text("/* built earlier */")
    built = wheel_build(copy, tmp_path / "dist", path=WITHOUT_NODE)
    assert built.returncode != 0
    assert "Could not find cmd (npm)" in built.stdout + built.stderr
    assert not list((tmp_path / "dist").glob("*.whl"))


@pytest.mark.skipif(shutil.which("npm") is None, reason="building the extension needs Node")
def test_the_wheel_builds_the_extension_from_its_sources_and_the_sdist_carries_it(
    tmp_path: Path,
) -> None:
    assert (LABEXTENSION / "node_modules").is_dir(), "run `npm ci` in js/labextension first"
    copy = source_copy(tmp_path)
    (copy / "js" / "labextension" / "node_modules").symlink_to(LABEXTENSION / "node_modules")
    # An extension built earlier, from older sources, is in the way.
    stale = copy / "planbook" / "labextension"
    (stale / "static").mkdir(parents=True)
    (stale / "package.json").write_text("{}")
    (stale / "static" / "style.js").write_text("/* built earlier */")
    (stale / "static" / "earlier.js").write_text("'built earlier'")
    # The TypeScript changed since.
    token = f"planbook:next-change-{uuid.uuid4().hex[:8]}"
    index = copy / "js" / "labextension" / "src" / "index.ts"
    text = index.read_text(encoding="utf-8")
    assert COMMAND_ID in text
    index.write_text(text.replace(COMMAND_ID, f"'{token}'"), encoding="utf-8")

    built = wheel_build(copy, tmp_path / "dist")
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("planbook-*.whl")
    shipped = extension_text(wheel)
    assert token in shipped and "built earlier" not in shipped

    # The sdist carries that build (made now from the same sources, so not built again here),
    # and a wheel built from the sdist needs no Node.
    sdist = subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-t", "sdist", "-d", str(tmp_path / "sdist")],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "SKIP_JUPYTER_BUILDER": "1"},
    )
    assert sdist.returncode == 0, sdist.stderr[-3000:]
    (archive,) = (tmp_path / "sdist").glob("planbook-*.tar.gz")
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        assert not [n for n in names if "node_modules" in n]
        tar.extractall(tmp_path / "unpacked", filter="data")
    (unpacked,) = (tmp_path / "unpacked").iterdir()
    from_sdist = wheel_build(unpacked, tmp_path / "from-sdist", path=WITHOUT_NODE)
    assert from_sdist.returncode == 0, from_sdist.stdout[-2000:] + from_sdist.stderr[-3000:]
    (wheel,) = (tmp_path / "from-sdist").glob("planbook-*.whl")
    assert token in extension_text(wheel)
