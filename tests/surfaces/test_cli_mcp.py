"""`planbook mcp [NOTEBOOK_OR_FOLDER]`: the MCP server started the way an agent starts it, by
command, and driven by the MCP SDK's own stdio client; a target it cannot serve, or a missing
MCP SDK, is one line and an exit code before anything is served."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from planbook.surfaces.cli import main as cli
from tests.support.engine import write_notebook
from tests.support.mcp_client import connect, ok

PROPOSE_AND_READ = {"list_notebooks", "read_notebook", "propose_edit_cell", "wait_for_review"}


def make_notebook(folder: Path) -> Path:
    return write_notebook(folder / "analysis.ipynb", ["x = 41"])


@pytest.mark.parametrize("how", ["notebook", "default folder"])
def test_the_command_serves_the_tools_to_an_mcp_client(tmp_path: Path, how: str) -> None:
    path = make_notebook(tmp_path)
    args = ["-m", "planbook", "mcp", path.name] if how == "notebook" else ["-m", "planbook", "mcp"]

    async def main() -> tuple[set[str], str]:
        async with connect(tmp_path, name="cli-agent", args=args) as session:
            tools = {t.name for t in (await session.list_tools()).tools}
            return tools, await ok(session, "list_notebooks")

    tools, notebooks = anyio.run(main)
    assert tools >= PROPOSE_AND_READ
    assert not {"approve", "reject", "set_mode"} & tools
    assert "analysis.ipynb" in notebooks


def planbook_mcp(*argv: str, cwd: Path, python: tuple[str, ...] = ("-m", "planbook")) -> str:
    """``planbook mcp ARGV`` with nothing on stdin; its one line on stderr (checked)."""
    result = subprocess.run(
        [sys.executable, *python, "mcp", *argv],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.stdout == ""  # nothing reached the protocol's channel
    assert result.stderr.startswith("planbook: ") and result.stderr.count("\n") == 1
    return f"{result.returncode} {result.stderr.removeprefix('planbook: ').rstrip()}"


def test_a_target_it_cannot_serve_is_one_line_before_serving(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    (tmp_path / "broken.ipynb").write_text("{")
    assert planbook_mcp("missing.ipynb", cwd=tmp_path) == (
        f"{cli.EXIT_MISSING} missing.ipynb: no such file or folder; give a notebook or a folder"
    )
    assert planbook_mcp("notes.txt", cwd=tmp_path) == (
        f"{cli.EXIT_NOT_NOTEBOOK} notes.txt: not a notebook (.ipynb) or a folder"
    )
    assert planbook_mcp("broken.ipynb", cwd=tmp_path) == (
        f"{cli.EXIT_NOT_NOTEBOOK} broken.ipynb: not a Jupyter notebook; pass an .ipynb file"
    )


def test_without_the_mcp_sdk_it_names_the_extra(tmp_path: Path) -> None:
    make_notebook(tmp_path)
    # The interpreter as it is without the mcp extra: `import mcp` fails.
    hide_mcp = (
        "-c",
        "import sys; sys.modules['mcp'] = None; "
        "from planbook.surfaces.cli.main import main; sys.exit(main(sys.argv[1:]))",
    )
    assert planbook_mcp("analysis.ipynb", cwd=tmp_path, python=hide_mcp) == (
        f"{cli.EXIT_DEPENDENCY} planbook mcp needs the MCP SDK, and mcp is not installed: "
        "pip install 'planbook[mcp]'"
    )
