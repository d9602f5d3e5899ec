from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from planbook.documents.file import FileNotebook
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace
from tests.support.jupyter_server import started_servers


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """pyproject's addopts ask pytest-xdist for two workers (`-n 2 --dist loadfile`). A run
    without xdist (`-p no:xdist`, or a venv without it) still understands those options and
    runs serially, instead of stopping at "unrecognized arguments"."""
    if pluginmanager.has_plugin("xdist"):
        return
    group = parser.getgroup("xdist", "pytest-xdist is not loaded: the run is serial")
    # `-n` is a lowercase short option, which only pytest's private _addoption accepts (as
    # xdist itself registers it).
    group._addoption(
        "-n",
        "--numprocesses",
        dest="numprocesses",
        default=None,
        help="ignored: pytest-xdist is not loaded",
    )
    group.addoption("--dist", dest="dist", default="no", help="ignored: pytest-xdist is not loaded")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A test that fails while this process has Jupyter servers running reports where each
    stands (CPU taken, the end of its log): CI keeps only the terminal, and a server busy
    with something else, or gone, shows there as timeouts in whatever test came next."""
    report = yield
    if report.failed:
        for server in started_servers():
            report.sections.append((f"jupyter server on port {server.port}", server.state()))
    return report


def make_notebook(path: Path, sources: list[str], *, ids: list[str] | None = None) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    for i, source in enumerate(sources):
        cell = nbformat.v4.new_code_cell(source)
        cell["id"] = ids[i] if ids else f"c{i + 1}"
        nb.cells.append(cell)
    nbformat.write(nb, path)
    return path


@pytest.fixture
def nb_path(tmp_path: Path) -> Path:
    return make_notebook(tmp_path / "analysis.ipynb", ["import math", "x = 1", "print(x + 1)"])


@pytest.fixture
def session(nb_path: Path) -> Session:
    return Session(
        FileNotebook(nb_path),
        Workspace(nb_path.parent, protected=(nb_path,)),
        notebook_path=nb_path,
    )


def reopen(nb_path: Path) -> Session:
    """A new session on the same file: what a kernel restart sees."""
    return Session(
        FileNotebook(nb_path),
        Workspace(nb_path.parent, protected=(nb_path,)),
        notebook_path=nb_path,
    )


def sources(nb_path: Path) -> list[tuple[str, str]]:
    nb = nbformat.read(nb_path, as_version=4)
    return [(c["id"], c["source"]) for c in nb.cells]


@pytest.fixture(autouse=True)
def _isolate_jupyter_dirs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Tests never read or write the user's own Jupyter or IPython state."""
    base = tmp_path_factory.mktemp("jupyter-home")
    saved = {k: os.environ.get(k) for k in ("JUPYTER_CONFIG_DIR", "IPYTHONDIR", "JPY_SESSION_NAME")}
    os.environ["JUPYTER_CONFIG_DIR"] = str(base / "config")
    os.environ["IPYTHONDIR"] = str(base / "ipython")
    os.environ.pop("JPY_SESSION_NAME", None)
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(autouse=True, scope="module")
def _no_ipython_shell_left_behind() -> Iterator[None]:
    """A module that made an in-process IPython shell (InteractiveShell.instance(), for an
    IPythonRunner) leaves it to no other module: with a shell, get_ipython() finds one and a
    plan approved outside a kernel runs its cells instead of failing as it must. (xdist runs
    the files in another order than a serial run: this no longer depends on the order.)"""
    yield
    if "IPython" in sys.modules:
        from IPython.core.interactiveshell import InteractiveShell

        InteractiveShell.clear_instance()


# --- nothing left behind -----------------------------------------------------------------------
#: The system temp folder as it was before the run redirected it, and its planbook-* entries then.
_SYSTEM_TMP = Path(tempfile.gettempdir())
_BEFORE: set[str] = set()


def _planbook_entries() -> set[str]:
    return {p.name for p in _SYSTEM_TMP.glob("planbook-*")}


def pytest_sessionstart(session: pytest.Session) -> None:
    """Everything this run and its children (kernels, servers, `planbook demo`, the notebooks
    nbval runs, which make their work folders with tempfile) put in "the temp folder" goes
    under pytest's own base temp, which pytest keeps tidy (the last three runs)."""
    _BEFORE.update(_planbook_entries())
    factory: pytest.TempPathFactory = session.config._tmp_path_factory  # type: ignore[attr-defined]
    redirected = factory.mktemp("system-tmp", numbered=False)
    os.environ["TMPDIR"] = str(redirected)
    # planbook's signing key (engine/signing.py): one for the run, its kernels and servers
    # (they get their own JUPYTER_DATA_DIR), never the user's own
    os.environ["PLANBOOK_SECRET_FILE"] = str(redirected / "planbook_secret")
    tempfile.tempdir = None  # gettempdir() caches its answer: ask again


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run if it left planbook-* entries in the system temp folder."""
    new = sorted(_planbook_entries() - _BEFORE)
    if new:
        shown = ", ".join(new[:5]) + (" ..." if len(new) > 5 else "")
        session.config.get_terminal_writer().line(
            f"the tests left {len(new)} planbook-* entries in {_SYSTEM_TMP}: {shown}; "
            "make them under tmp_path (or TMPDIR) and remove them (another test run on this "
            "machine at the same time can leave them too)",
            red=True,
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
