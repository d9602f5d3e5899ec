"""A notebook the person trusted (Jupyter's notary signed it) is still trusted after planbook
saved a change into the file; one they never trusted is not made trusted."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from nbformat.sign import NotebookNotary

from planbook.documents.file import FileNotebook
from planbook.model.cell import Cell
from tests.conftest import make_notebook


@pytest.fixture
def notary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[NotebookNotary]:
    """This person's notary, in a data dir of the test's own."""
    data = tmp_path / "jupyter-data"
    data.mkdir()
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(data))
    with NotebookNotary() as made:
        assert Path(made.secret_file).parent == data  # never the real user's
        yield made


def trusted(notary: NotebookNotary, path: Path) -> bool:
    return bool(notary.check_signature(nbformat.read(path, as_version=4)))


def add_output(path: Path) -> None:
    doc = FileNotebook(path)
    with doc.transaction():
        cell = doc.cells()[1]
        out = {"output_type": "stream", "name": "stdout", "text": "42\n"}
        doc.replace_cell(Cell(**{**cell.model_dump(), "outputs": [out], "execution_count": 3}))


def test_a_trusted_notebook_stays_trusted_after_planbook_saves(
    tmp_path: Path, notary: NotebookNotary
) -> None:
    path = make_notebook(tmp_path / "mine.ipynb", ["x = 41", "print(x + 1)"])
    notary.sign(nbformat.read(path, as_version=4))
    assert trusted(notary, path)
    add_output(path)
    assert "42" in path.read_text()
    assert trusted(notary, path)


def test_an_untrusted_notebook_stays_untrusted(tmp_path: Path, notary: NotebookNotary) -> None:
    path = make_notebook(tmp_path / "theirs.ipynb", ["x = 41", "print(x + 1)"])
    add_output(path)
    assert "42" in path.read_text()
    assert not trusted(notary, path)


def test_without_a_notary_nothing_is_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "no-notary"
    data.mkdir()
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(data))
    path = make_notebook(tmp_path / "plain.ipynb", ["x = 41", "print(x + 1)"])
    add_output(path)
    assert os.listdir(data) == []
