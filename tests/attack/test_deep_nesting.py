"""Content nested deeper than planbook holds (issue 23, section 6): a received notebook made
with planbook, then edited as plain JSON so that another extension's metadata, a cell's
metadata, an output or the agent's conversation nests 350 or 10,000 levels.

Opening it never fails on the deep part: the steps of the plan keep working, and the file is
written back byte for byte except for what the step changed (the deep part as it was). What
planbook would have to read or copy (a too-deep conversation, a checkpoint of a too-deep cell)
is refused in one line, and only that; the file, the CLI and the MCP read tools say the same.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import anyio
import pytest

from planbook.agent import memory
from planbook.documents.file import FileNotebook
from planbook.documents.headless import HeadlessRun, open_headless
from planbook.documents.page import PageNotebook
from planbook.errors import MetadataError, PlanbookError
from planbook.model.cell import Cell
from planbook.sessions.session import Session
from planbook.surfaces.cli import main as cli
from planbook.workspace.files import Workspace
from tests.conftest import make_notebook
from tests.support.mcp_client import connect, ok

PLACE = '"@@DEEP@@"'
#: What the twin notebook holds where the other holds the deep part.
STAND_IN = "{}"
WHERES = ["notebook metadata", "cell metadata", "output", "conversation"]


def deep_text(depth: int) -> str:
    """``depth`` levels of objects, with brackets and quotes inside its one string."""
    return '{"k": ' * (depth - 1) + '["a ] } \\" [ {"]' + "}" * (depth - 1)


def open_session(path: Path) -> Session:
    return Session(
        FileNotebook(path), Workspace(path.parent, protected=(path,)), notebook_path=path
    )


def received(folder: Path, where: str, depth: int | None) -> tuple[Path, str]:
    """A notebook planbook made (one pending step on c2), with the deep part planted where
    named as plain JSON (None: the placeholder string left in, for a twin to compare with)."""
    path = make_notebook(folder / "received.ipynb", ["import math", "x = 1", "print(x + 1)"])
    open_session(path).propose.edit_cell("c2", "x = 2", reason="a better value")
    nb = json.loads(path.read_text())
    if where == "conversation":
        nb["metadata"]["planbook"]["conversation"] = "@@DEEP@@"
    elif where == "notebook metadata":
        nb["metadata"]["other_extension"] = {"state": "@@DEEP@@"}
    elif where == "cell metadata":
        nb["cells"][0]["metadata"]["other_extension"] = "@@DEEP@@"
    else:
        nb["cells"][0]["outputs"] = [
            {
                "output_type": "display_data",
                "metadata": {},
                "data": {"application/json": "@@DEEP@@"},
            }
        ]
    text = json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    deep = STAND_IN if depth is None else deep_text(depth)
    path.write_text(text.replace(PLACE, deep))
    return path, deep


def without_planbook(text: str, deep: str) -> dict:  # type: ignore[type-arg]
    nb = json.loads(text.replace(deep, STAND_IN))
    nb["metadata"].pop("planbook")
    return nb  # type: ignore[no-any-return]


def cells_text(data: bytes) -> bytes:
    """The file's bytes up to its notebook metadata: every cell as written."""
    return data[: data.rindex(b'\n "metadata": {')]


@pytest.mark.parametrize("depth", [350, 10_000])
@pytest.mark.parametrize("where", WHERES)
def test_a_deep_part_never_stops_a_step_and_is_written_back_as_it_was(
    where: str, depth: int, tmp_path: Path
) -> None:
    (tmp_path / "deep").mkdir()
    (tmp_path / "twin").mkdir()
    path, deep = received(tmp_path / "deep", where, depth)
    twin, _ = received(tmp_path / "twin", where, None)
    for notebook in (path, twin):
        session = open_session(notebook)
        session.propose.edit_cell("c3", "print(3)", reason="say three")
        report = session.approve()
        assert report.ok, report

    after = path.read_text()
    assert after.count(deep) == 1  # kept as it was, character for character
    # byte for byte what the same steps make of the same notebook without the deep part
    expected = twin.read_bytes()
    assert cells_text(after.replace(deep, STAND_IN).encode()) == cells_text(expected)
    assert without_planbook(after, deep) == without_planbook(twin.read_text(), STAND_IN)
    sources = {
        c["id"]: "".join(c["source"]) for c in json.loads(after.replace(deep, STAND_IN))["cells"]
    }
    assert sources == {"c1": "import math", "c2": "x = 2", "c3": "print(3)"}


@pytest.mark.parametrize("depth", [350, 10_000])
def test_a_deep_conversation_alone_is_refused_in_one_line(depth: int, tmp_path: Path) -> None:
    path, deep = received(tmp_path, "conversation", depth)
    session = open_session(path)
    before = path.read_bytes()

    with pytest.raises(MetadataError) as read:
        memory.saved(session)
    message = str(read.value)
    assert "\n" not in message and "conversation" in message
    assert "nested deeper than" in message and "plans keep working" in message

    with pytest.raises(MetadataError):  # nothing written over it either
        session.edit_conversation(lambda conversation: None)
    assert path.read_bytes() == before

    # the plan still reads and runs; the conversation is still there, untouched
    assert "a better value" in session.render_text()
    assert session.approve().ok
    assert path.read_text().count(deep) == 1


def test_a_deep_plan_is_refused_as_corrupted_in_one_line(tmp_path: Path) -> None:
    path, _ = received(tmp_path, "notebook metadata", None)
    nb = json.loads(path.read_text())
    plan = next(iter(nb["metadata"]["planbook"]["plans"].values()))
    plan["revisions"][0]["steps"][0]["operation"]["source"] = "@@DEEP@@"
    text = json.dumps(nb, indent=1, sort_keys=True) + "\n"
    path.write_text(text.replace(PLACE, deep_text(350)).replace(STAND_IN, "{}"))
    before = path.read_bytes()

    with pytest.raises(MetadataError) as refused:
        open_session(path)
    message = str(refused.value)
    assert "\n" not in message and "corrupted at plans" in message
    assert "nested deeper than" in message and "left untouched" in message
    assert path.read_bytes() == before


@pytest.mark.parametrize("depth", [350, 10_000])
def test_a_step_on_the_deep_cell_keeps_its_metadata_or_refuses_in_one_line(
    depth: int, tmp_path: Path
) -> None:
    path, deep = received(tmp_path, "cell metadata", depth)
    session = open_session(path)
    session.propose.edit_cell("c1", "import math as m", reason="shorter")
    assert session.approve().ok
    assert path.read_text().count(deep) == 1  # the edit kept the cell's metadata as it was

    # deleting the cell needs a checkpoint of all of it: planbook cannot copy the deep part
    session.propose.delete_cell("c1", reason="unused")
    before = path.read_bytes()
    report = session.approve()
    assert not report.ok
    said = str(report)
    assert "nested deeper than" in said and "Traceback" not in said and "TypeError" not in said
    after = path.read_text()
    assert after.count(deep) == 1 and '"c1"' in after.replace(deep, STAND_IN)
    assert (
        json.loads(before.decode().replace(deep, STAND_IN))["cells"]
        == json.loads(after.replace(deep, STAND_IN))["cells"]
    )


@pytest.mark.parametrize("where", WHERES)
def test_the_cli_shows_and_rejects_a_deep_notebook(
    where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, deep = received(tmp_path, where, 10_000)
    assert cli.main(["show", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "a better value" in out and err == ""
    assert cli.main(["reject", str(path)]) == 0
    capsys.readouterr()
    after = path.read_text()
    assert after.count(deep) == 1
    step = next(
        iter(json.loads(after.replace(deep, STAND_IN))["metadata"]["planbook"]["plans"].values())
    )
    assert step["revisions"][-1]["steps"][0]["status"] == "rejected"


@pytest.mark.parametrize("where", ["cell metadata", "output"])
def test_the_mcp_read_tools_read_a_deep_notebook(where: str, tmp_path: Path) -> None:
    path, deep = received(tmp_path, where, 10_000)
    before = path.read_bytes()

    async def main() -> None:
        async with connect(path) as session:
            listed = await ok(session, "read_notebook")
            assert "import math" in listed and "print(x + 1)" in listed
            assert "import math" in await ok(session, "read_cell", cell="c1")
            assert "a better value" in await ok(session, "read_plan")
            await ok(session, "propose_edit_cell", cell="c3", source="print(3)", reason="r")

    anyio.run(main)
    after = path.read_text()
    assert after.count(deep) == 1 and path.read_bytes() != before


def test_the_page_backend_reads_a_deep_file_and_refuses_only_the_deep_cell(tmp_path: Path) -> None:
    path, _ = received(tmp_path, "cell metadata", 10_000)
    page = PageNotebook.from_file(path)
    assert [c.id for c in page.cells()] == ["c1", "c2", "c3"]
    page.attach(lambda message: None, owner=object())
    page.replace_cell(Cell(id="c3", cell_type="code", source="print(3)"))  # another cell: fine
    deep_cell = page.find_cell("c1")
    assert deep_cell is not None
    with pytest.raises(PlanbookError) as refused:
        page.replace_cell(deep_cell.cell.model_copy(update={"source": "import math as m"}))
    assert "\n" not in str(refused.value) and "nested deeper than" in str(refused.value)


def test_opening_ten_thousand_levels_takes_bounded_time_and_memory(tmp_path: Path) -> None:
    path, deep = received(tmp_path, "notebook metadata", 100_000)
    tracemalloc.start()
    try:
        session = open_session(path)
        session.propose.edit_cell("c3", "print(3)", reason="say three")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # the deep part is 800 KB of text: a few copies of it, never a tree of 100,000 levels
    assert peak < 16 * len(deep), peak
    assert path.read_text().count(deep) == 1


@pytest.mark.parametrize("where", WHERES)
def test_strip_as_a_git_filter_keeps_a_deep_part_and_drops_planbook(
    where: str, tmp_path: Path
) -> None:
    path, deep = received(tmp_path, where, 10_000)
    done = subprocess.run(
        [sys.executable, "-m", "planbook", "strip"],
        input=path.read_bytes(),
        capture_output=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    nb = json.loads(out.replace(deep, STAND_IN))
    assert "planbook" not in nb["metadata"]
    assert out.count(deep) == (0 if where == "conversation" else 1)


def test_a_headless_run_edits_a_deep_notebook(tmp_path: Path) -> None:
    path, deep = received(tmp_path, "output", 10_000)
    run = HeadlessRun(
        tool="jupyter nbconvert --execute", notebook=path, writes=tmp_path / "out.ipynb"
    )
    document = open_headless(run)
    session = Session(document, Workspace(tmp_path, protected=(path,)), notebook_path=path)
    session.propose.edit_cell("c3", "print(3)", reason="say three")
    assert session.approve().ok
    assert path.read_text().count(deep) == 1
