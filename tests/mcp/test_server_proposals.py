"""Proposing over MCP: steps staged in the notebook file with the client's origin, shown by
`planbook show`, approved by the person with `planbook approve` (a real kernel), and reported
back to the waiting client by wait_for_review."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import anyio
import nbformat
import pytest

from tests.support.mcp_client import connect, ok


def analysis_notebook(folder: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    load = nbformat.v4.new_code_cell("x = 41\nx")
    load["id"] = "load"
    title = nbformat.v4.new_markdown_cell("# Analysis")
    title["id"] = "title"
    nb.cells = [title, load]
    path = folder / "analysis.ipynb"
    nbformat.write(nb, path)
    return path


def planbook_cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "planbook", *argv], capture_output=True, text=True, timeout=300
    )


@pytest.mark.kernel
def test_propose_review_with_the_cli_and_wait_for_the_results(tmp_path: Path) -> None:
    path = analysis_notebook(tmp_path)

    async def main() -> None:
        async with connect(path, name="claude-code", version="2.1.0") as session:
            edit = await ok(
                session,
                "propose_edit_cell",
                cell="#1",
                source="# Analysis of x",
                reason="say what is analysed",
            )
            assert edit.startswith("Staged step 1 of the plan in analysis.ipynb")
            assert "wait_for_review" in edit
            shell = await ok(
                session, "propose_shell", command="echo $((6 * 7)) > answer.txt", reason="save it"
            )
            assert shell.startswith("Staged step 2")
            code = await ok(session, "propose_run_code", code="print(x + 1)", reason="check x")
            assert code.startswith("Staged step 3")

            # Staged in the file, not applied: the notebook's cells are as they were.
            nb = nbformat.read(path, as_version=4)
            assert [c.source for c in nb.cells] == ["# Analysis", "x = 41\nx"]
            assert not (tmp_path / "answer.txt").exists()
            plan = next(iter(nb.metadata["planbook"]["plans"].values()))
            steps = plan["revisions"][-1]["steps"]
            assert [s["status"] for s in steps] == ["pending"] * 3
            assert {s["origin"] for s in steps} == {"claude-code 2.1.0 (MCP)"}
            log = [
                e
                for bucket in nb.metadata["planbook"]["log"].values()
                for e in bucket.values()
                if e["event"] == "staged"
            ]
            assert all(e["detail"].endswith("from claude-code 2.1.0 (MCP)") for e in log)

            shown = planbook_cli("show", str(path))
            assert shown.returncode == 0, shown.stderr
            assert "1. [pending] edit cell" in shown.stdout
            assert "2. [pending] run shell" in shown.stdout
            assert "from: claude-code 2.1.0 (MCP)" in await ok(session, "read_plan")

            # Nothing is decided yet: a short wait says so and names what is open.
            waited = await ok(session, "wait_for_review", timeout_s=0.5)
            assert waited.startswith("timed out after 0.5 s with 3 steps still open")

            # The person approves in another process while the client waits.
            started = time.monotonic()
            async with anyio.create_task_group() as group:
                answer: list[str] = []

                async def wait() -> None:
                    answer.append(await ok(session, "wait_for_review", timeout_s=240))

                group.start_soon(wait)
                approved = await anyio.to_thread.run_sync(planbook_cli, "approve", str(path))
                assert approved.returncode == 0, approved.stdout + approved.stderr
            assert time.monotonic() - started < 240
            result = answer[0]
            assert result.startswith("every step is decided:")
            assert "1. [done] edit cell" in result
            assert "2. [done] run shell" in result
            assert "3. [done] insert code cell" in result
            # the new cell's output, under the step that ran it (not a random id's digits)
            ran = result.split("3. [done] insert code cell", 1)[1]
            assert re.search(r"outputs of cell \w+:\n\s+.*\b42\b", ran), result

    anyio.run(main)
    assert (tmp_path / "answer.txt").read_text() == "42\n"
    nb = nbformat.read(path, as_version=4)
    assert nb.cells[0].source == "# Analysis of x"
    assert nb.cells[-1].outputs[0]["text"] == "42\n"
    assert json.dumps(nb.metadata["planbook"]).count('"origin"') == 3
