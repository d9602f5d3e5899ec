"""Reading over MCP: the tool list, cells with outputs and images, one cell, the plan, files.
Each test drives the real server in a subprocess with the SDK's own client."""

from __future__ import annotations

import base64
import gc
import os
import tracemalloc
from pathlib import Path

import anyio
import nbformat

from planbook.sessions.served import KEEP, ServedNotebooks
from tests.support.mcp_client import connect, images, ok, text

#: A 1x1 PNG, as Jupyter stores it (base64, ending in a newline).
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
        "0000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()

READ_TOOLS = {
    "list_notebooks",
    "read_notebook",
    "read_cell",
    "read_plan",
    "read_variables",
    "list_files",
    "read_file",
}
PROPOSE_TOOLS = {
    "propose_insert_cell",
    "propose_edit_cell",
    "propose_delete_cell",
    "propose_move_cell",
    "propose_run_cell",
    "propose_run_code",
    "propose_write_file",
    "propose_edit_file",
    "propose_delete_file",
    "propose_shell",
}


def figure_notebook(folder: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    title = nbformat.v4.new_markdown_cell("# Penguins")
    title["id"] = "title"
    plot = nbformat.v4.new_code_cell("print('plotting')\nshow()", execution_count=3)
    plot["id"] = "plot"
    plot.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="plotting\n"),
        nbformat.v4.new_output(
            "display_data", data={"image/png": PNG + "\n", "text/plain": "<Figure 1>"}
        ),
    ]
    nb.cells = [title, plot]
    path = folder / "figures.ipynb"
    nbformat.write(nb, path)
    return path


def test_the_tools_read_propose_and_wait_and_none_decides(tmp_path: Path) -> None:
    path = figure_notebook(tmp_path)

    async def main() -> None:
        async with connect(path) as session:
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert set(tools) == READ_TOOLS | PROPOSE_TOOLS | {"ask_person", "wait_for_review"}
            for name in tools:  # no way to approve, reject, answer, or change mode or rules
                for word in ("approve", "reject", "mode", "rule", "answer", "permission"):
                    assert word not in name
            assert all(tools[n].annotations.read_only_hint for n in READ_TOOLS)
            assert not any(tools[n].annotations.read_only_hint for n in PROPOSE_TOOLS)
            assert all("reason" in tools[n].input_schema["required"] for n in PROPOSE_TOOLS)
            # every string argument is bounded in the schema the client sees
            for tool in tools.values():
                for prop in tool.input_schema["properties"].values():
                    options = prop.get("anyOf", [prop])
                    for option in options:
                        if option.get("type") == "string" and "enum" not in option:
                            assert "maxLength" in option, (tool.name, prop)

    anyio.run(main)


def test_cells_come_with_outputs_as_text_and_images_as_image_content(tmp_path: Path) -> None:
    path = figure_notebook(tmp_path)
    before = path.read_bytes()

    async def main() -> None:
        async with connect(path) as session:
            result = await session.call_tool("read_notebook", {})
            assert not result.is_error
            body = text(result)
            assert "figures.ipynb: 2 cells" in body
            assert "#1 id=title markdown\n# Penguins" in body
            assert "#2 id=plot code execution_count=3" in body
            assert "- stdout: plotting" in body
            assert "<Figure 1>" in body
            [image] = images(result)
            assert image.mime_type == "image/png"
            assert base64.b64decode(image.data).startswith(b"\x89PNG")

            one = await session.call_tool("read_cell", {"cell": "#2"})
            assert text(one).startswith("#2 id=plot code")
            assert len(images(one)) == 1
            assert "#1 id=title" in await ok(session, "read_cell", cell="titl")  # a prefix

            assert "no plan yet (mode: plan)" in await ok(session, "read_plan")
            assert "figures.ipynb" in await ok(session, "list_files")
            (tmp_path / "notes.md").write_text("one\ntwo\nthree\n")
            assert await ok(session, "read_file", path="notes.md", offset=1, limit=1) == (
                "    2| two\n[... 1 more lines: read on with offset=2]"
            )

    anyio.run(main)
    assert path.read_bytes() == before  # reading never writes


def test_a_folder_lists_its_notebooks_and_each_is_named(tmp_path: Path) -> None:
    figure_notebook(tmp_path)
    (tmp_path / "sub").mkdir()
    figure_notebook(tmp_path / "sub")
    (tmp_path / ".ipynb_checkpoints").mkdir()
    figure_notebook(tmp_path / ".ipynb_checkpoints")

    async def main() -> None:
        async with connect(tmp_path) as session:
            assert await ok(session, "list_notebooks") == "figures.ipynb\nsub/figures.ipynb"
            assert "#2 id=plot" in await ok(
                session, "read_cell", cell="plot", notebook="sub/figures.ipynb"
            )
            result = await session.call_tool("read_notebook", {})
            assert result.is_error and "say which notebook" in text(result)

    anyio.run(main)


def numbered_notebooks(folder: Path, count: int, output_bytes: int = 0) -> list[str]:
    """``count`` notebooks n00.ipynb... of one cell each; ``output_bytes`` of incompressible
    base64 in the cell's output (what an image weighs)."""
    names = []
    for i in range(count):
        nb = nbformat.v4.new_notebook()
        cell = nbformat.v4.new_code_cell(f"x = {i}")
        cell["id"] = "only"
        if output_bytes:
            blob = base64.b64encode(os.urandom(output_bytes * 3 // 4)).decode()
            cell.outputs = [nbformat.v4.new_output("display_data", data={"image/png": blob})]
        nb.cells = [cell]
        name = f"n{i:02}.ipynb"
        nbformat.write(nb, folder / name)
        names.append(name)
    return names


def test_a_notebook_let_go_among_many_is_opened_again_as_it_stands(tmp_path: Path) -> None:
    """A server on a folder keeps only the notebooks used last open: one it let go, named
    again, goes on with its plan and reads what the file holds now."""
    names = numbered_notebooks(tmp_path, KEEP + 4)
    first = tmp_path / names[0]

    async def main() -> None:
        async with connect(tmp_path) as session:
            staged = await ok(
                session,
                "propose_edit_cell",
                notebook=names[0],
                cell="only",
                source="x = 100",
                reason="the first",
            )
            assert staged.startswith(f"Staged step 1 of the plan in {names[0]}")
            for name in names[1:]:  # every other notebook read and proposed to, in turn
                assert "x = " in await ok(session, "read_notebook", notebook=name)
                await ok(
                    session,
                    "propose_edit_cell",
                    notebook=name,
                    cell="only",
                    source="y = 1",
                    reason="another",
                )
            # meanwhile the person edits the first notebook's cell in the file
            nb = nbformat.read(first, as_version=4)
            nb.cells[0].source = "x = 0  # the person's"
            nbformat.write(nb, first)
            assert "x = 0  # the person's" in await ok(session, "read_notebook", notebook=names[0])
            again = await ok(
                session,
                "propose_insert_cell",
                notebook=names[0],
                source="print(x)",
                reason="the second",
            )
            assert again.startswith(f"Staged step 2 of the plan in {names[0]}"), again
            plan = await ok(session, "read_plan", notebook=names[0])
            assert "the first" in plan and "the second" in plan

    anyio.run(main)
    steps = nbformat.read(first, as_version=4).metadata["planbook"]["plans"]
    (plan,) = steps.values()
    assert [s["reason"] for s in plan["revisions"][-1]["steps"]] == ["the first", "the second"]


def test_reading_every_notebook_of_a_big_folder_keeps_only_the_last_ones(tmp_path: Path) -> None:
    """Memory, in the server's own process: reading 3 x KEEP notebooks of 1 MB each holds
    about KEEP of them, not all (a parsed notebook takes about twice its file's size)."""
    names = numbered_notebooks(tmp_path, 3 * KEEP, output_bytes=1_000_000)
    served = ServedNotebooks(tmp_path)
    gc.collect()
    tracemalloc.start()
    try:
        for name in names[:KEEP]:
            served.cells(served.notebook_path(name))
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0]
        for name in names[KEEP:]:
            served.cells(served.notebook_path(name))
            session = served.session(name)
            session.propose.edit_cell("only", "x = 1", reason="r")
        gc.collect()
        more = tracemalloc.get_traced_memory()[0] - kept
    finally:
        tracemalloc.stop()
        served.close()
    per_notebook = kept / KEEP
    assert per_notebook > 1_000_000, "each notebook read is held while it is among the last"
    # the sessions opened on the way hold their own KEEP copies; nothing beyond
    assert more < (KEEP + 2) * per_notebook, (more, per_notebook)
