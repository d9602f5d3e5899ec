"""Which backend a session gets, and the one line that says why."""

from __future__ import annotations

from pathlib import Path

import pytest

from planbook.documents.locate import open_document
from tests.support.jupyter_server import RunningServer, start_jupyter

pytestmark = pytest.mark.server


@pytest.fixture(autouse=True)
def no_jupyter_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "JPY_SESSION_NAME",
        "JPY_PARENT_PID",
        "PLANBOOK_SERVER_URL",
        "PLANBOOK_SERVER_TOKEN",
    ):
        monkeypatch.delenv(name, raising=False)


def test_an_explicit_server_gives_the_live_backend(
    server: RunningServer, notebook: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLANBOOK_SERVER_URL", server.url)
    monkeypatch.setenv("PLANBOOK_SERVER_TOKEN", server.token)
    located = open_document(server.root / notebook)
    try:
        assert located.document.backend == "live"
        assert notebook in located.document.description
        assert located.path == (server.root / notebook).resolve()
        assert [c.id for c in located.document.cells()] == ["c1", "c2", "c3"]
    finally:
        getattr(located.document, "close", lambda: None)()


def test_live_can_be_turned_off(
    server: RunningServer, notebook: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLANBOOK_SERVER_URL", server.url)
    monkeypatch.setenv("PLANBOOK_SERVER_TOKEN", server.token)
    located = open_document(server.root / notebook, live=False)
    assert located.document.backend == "file"
    assert "live editing turned off" in located.document.description


def test_a_server_without_collaboration_gives_the_file_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with start_jupyter(tmp_path / "plain", lab=False, collaboration=False) as plain:
        path = plain.write_notebook("n.ipynb", ["x = 1"])
        monkeypatch.setenv("PLANBOOK_SERVER_URL", plain.url)
        monkeypatch.setenv("PLANBOOK_SERVER_TOKEN", plain.token)
        located = open_document(path)
        assert located.document.backend == "file"
        assert "no collaboration on the server" in located.document.description
        assert "planbook[live]" in located.document.description


def test_vscode_gives_the_file_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "vs.ipynb"
    path.write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    located = open_document(user_ns={"__vsc_ipynb_file__": str(path)})
    assert located.document.backend == "file"
    assert "VS Code" in located.document.description


def test_no_notebook_gives_memory_and_says_why() -> None:
    located = open_document(user_ns={})
    assert located.document.backend == "memory"
    assert "no notebook found" in located.document.description
