from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from planbook.documents.file import FileNotebook
from planbook.session import Session
from planbook.workspace import Workspace


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
