"""Content nested hundreds or thousands of levels deep in a notebook open in a live room (issue
23, section 6), against a real JupyterLab with jupyter-collaboration.

350 levels: the server reads the file, and so does planbook; a deep conversation is refused in
one line while the plan's steps run, and every save keeps it and the other deep part. 10,000
levels: the server itself cannot read the file (nbformat's JSON reader stops near 1,000), so
there is no room: opening it says so in one line, at once, and the file backend still works.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from planbook.agent import memory
from planbook.documents.file import FileNotebook
from planbook.documents.live.document import open_live
from planbook.errors import LiveConnectionError, MetadataError
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace
from tests.live.conftest import on_disk
from tests.support.jupyter_server import RunningServer

pytestmark = pytest.mark.server


def deep_value(depth: int) -> str:
    return '{"k": ' * depth + "1" + "}" * depth


def plant(path: Path, depth: int) -> None:
    """Another extension's metadata and the agent's conversation, ``depth`` levels each."""
    nb = json.loads(path.read_text())
    nb["metadata"]["other"] = "@@OTHER@@"
    nb["metadata"].setdefault("planbook", {})["conversation"] = "@@CONVERSATION@@"
    text = json.dumps(nb, indent=1)
    for mark in ("@@OTHER@@", "@@CONVERSATION@@"):
        text = text.replace(f'"{mark}"', deep_value(depth))
    path.write_text(text)


def levels(value: Any) -> int:
    count = 0
    while isinstance(value, dict):
        value, count = value["k"], count + 1
    return count


def test_a_deep_conversation_in_a_room_is_refused_alone(server: RunningServer) -> None:
    name = "deep350.ipynb"
    path = server.write_notebook(name, ["import math", "x = 1"], ids=["c1", "c2"])
    session = Session(FileNotebook(path), Workspace(server.root), notebook_path=path)
    session.propose.edit_cell("c1", "import math as m", reason="shorter")
    plant(path, 350)

    doc = open_live(server.url, server.token, name)
    try:
        session = Session(doc, Workspace(server.root))
        with pytest.raises(MetadataError) as refused:
            memory.saved(session)
        assert "\n" not in str(refused.value) and "conversation" in str(refused.value)
        session.propose.edit_cell("c2", "x = 2", reason="a better value")
        report = session.approve()
        assert report.ok, report
        assert doc.make_durable(timeout=20) == ""
    finally:
        doc.close()
    saved = on_disk(server, name)
    assert ["".join(c["source"]) for c in saved["cells"]] == ["import math as m", "x = 2"]
    assert levels(saved["metadata"]["other"]) == 350
    assert levels(saved["metadata"]["planbook"]["conversation"]) == 350


def test_a_notebook_the_server_cannot_read_is_said_in_one_line(server: RunningServer) -> None:
    name = "deep10000.ipynb"
    path = server.write_notebook(name, ["import math", "x = 1"], ids=["c1", "c2"])
    plant(path, 10_000)
    before = path.read_bytes()

    with pytest.raises(LiveConnectionError) as refused:
        open_live(server.url, server.token, name)
    said = str(refused.value)
    assert "\n" not in said and "Error initializing" in said and "file backend" in said
    assert path.read_bytes() == before

    # the file backend it names reads the file and changes only the step's cell
    session = Session(FileNotebook(path), Workspace(server.root), notebook_path=path)
    session.propose.edit_cell("c2", "x = 2", reason="a better value")
    assert session.approve().ok
    assert path.read_text().count(deep_value(10_000)) == 2  # both kept as they were
