"""planbook as an MCP server: how soon a proposal is seen, and what a read costs.

1. Proposal to page: a real JupyterLab server with jupyter-collaboration and planbook's server
   extension; an MCP client (the official SDK's streamable HTTP client) proposes an edit through
   the endpoint; a second client, a plain pycrdt collaboration client in the notebook's room,
   watches for the step in the notebook's metadata. Time from the call to the watcher seeing
   it; ``PROPOSALS`` rounds, median; goal: at most 1 s.
2. Proposal to page without collaboration (``--YDocExtension.disable_rtc=True``): JupyterLab in
   Chromium with the notebook open and planbook loaded in its kernel; the MCP client proposes
   a new cell through the endpoint, which stages it through the page's kernel; the second
   client is the page itself: time from the call to the step's review showing on the page
   (``.pb-cell-review``); ``PROPOSALS`` rounds, median; goal: at most 1 s.
3. Reading 100 cells: ``read_notebook`` of a 100-cell notebook through planbook's stdio server,
   and the same read through a plain MCP server written here (the SDK's MCPServer, one tool that
   reads the file with nbformat and prints every cell), both real subprocesses driven by the
   SDK's stdio client, interleaved, ``READS`` rounds each; goal: planbook's median within 2x.

Run: ``python benchmarks/bench_mcp.py`` (or ``python benchmarks/run.py mcp``)
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import nbformat
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.browser.test_page import first_run, open_notebook, run_cell
from tests.live.yclient import YClient
from tests.support.browser import chromium_context
from tests.support.jupyter_server import RunningServer
from tests.support.labextension import expose_labextension
from tests.support.mcp_client import ok
from tests.support.mcp_http import connect_http, with_endpoint

PROPOSALS = 20
READS = 20
CELLS = 100

PLAIN_SERVER = '''
"""A plain MCP server: one tool that reads a notebook file with nbformat."""
import sys
import nbformat
from mcp.server.mcpserver import MCPServer

server = MCPServer("plain")


@server.tool()
def read_notebook(path: str) -> str:
    nb = nbformat.read(path, as_version=4)
    out = [f"{path}: {len(nb.cells)} cells"]
    for n, cell in enumerate(nb.cells, start=1):
        out.append(f"#{n} id={cell.get('id')} {cell.cell_type}\\n{cell.source}")
        for o in cell.get("outputs", []):
            out.append(str(o.get("text") or o.get("data", {}).get("text/plain", "")))
    return "\\n".join(out)


server.run()
'''


def spread(times: list[float]) -> str:
    return (
        f"min {min(times) * 1000:.1f} ms, median {statistics.median(times) * 1000:.1f} ms, "
        f"max {max(times) * 1000:.1f} ms"
    )


def steps_in(metadata: dict[str, Any]) -> int:
    plans = (metadata.get("planbook") or {}).get("plans") or {}
    return sum(len(p["revisions"][-1]["steps"]) for p in plans.values())


def proposal_seen(folder: Path) -> list[float]:
    server = with_endpoint(RunningServer(folder / "root"))
    server.start()
    try:
        server.write_notebook("bench.ipynb", ["x = 1", "print(x)"], ids=["load", "show"])
        watcher = YClient(server, "bench.ipynb")
        times: list[float] = []

        async def main() -> None:
            async with connect_http(server, name="bench", version="1") as session:
                await ok(session, "read_plan", notebook="bench.ipynb")  # the room is open
                for n in range(1, PROPOSALS + 1):
                    started = time.perf_counter()
                    seen: list[float] = []

                    def watch(k: int = n, into: list[float] = seen) -> None:
                        assert watcher.wait_for(lambda c: steps_in(c.metadata()) >= k, 10)
                        into.append(time.perf_counter())

                    async with anyio.create_task_group() as group:
                        group.start_soon(anyio.to_thread.run_sync, watch)
                        await ok(
                            session,
                            "propose_edit_cell",
                            notebook="bench.ipynb",
                            cell="show",
                            source=f"print(x + {n})",
                            reason=f"round {n}",
                        )
                    times.append(seen[0] - started)

        try:
            anyio.run(main)
        finally:
            watcher.close()
        return times
    finally:
        server.close()


def proposal_seen_in_page(folder: Path) -> list[float]:
    server = with_endpoint(
        RunningServer(folder / "root-off", extra_args=["--YDocExtension.disable_rtc=True"])
    )
    expose_labextension(Path(server.env["JUPYTER_DATA_DIR"]))
    server.env["JUPYTER_PREFER_ENV_PATH"] = "0"  # this tree's build of the in-cell review
    server.start()
    times: list[float] = []

    def propose(n: int) -> float:
        async def one() -> float:
            async with connect_http(server, name="bench", version="1") as session:
                started = time.perf_counter()
                await ok(
                    session,
                    "propose_insert_cell",
                    notebook="page.ipynb",
                    source=f"print(x + {n})",
                    after="show",
                    reason=f"round {n}",
                )
                return started

        return anyio.run(one)

    try:
        server.write_notebook("page.ipynb", ["x = 1", "print(x)", ""], ids=["load", "show", "m"])
        with chromium_context(folder / "chromium", width=1100, height=1200) as context:
            page = context.new_page()
            panel = open_notebook(page, server, "page.ipynb", 3)
            first_run(panel)
            run_cell(panel, 2, "%load_ext planbook\n%plan")
            with ThreadPoolExecutor(1) as pool:
                for n in range(1, PROPOSALS + 1):
                    call = pool.submit(propose, n)
                    box = page.locator(f".pb-cell-review[data-step-number='{n}']")
                    box.wait_for(state="attached", timeout=10_000)
                    seen = time.perf_counter()
                    times.append(seen - call.result())
        return times
    finally:
        server.close()


def hundred_cells(folder: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    for i in range(CELLS):
        cell = nbformat.v4.new_code_cell(f"value_{i} = {i} * 2\nprint(value_{i})")
        cell["id"] = f"c{i}"
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"{i * 2}\n")]
        nb.cells.append(cell)
    path = folder / "hundred.ipynb"
    nbformat.write(nb, path)
    return path


def reads(folder: Path) -> tuple[list[float], list[float]]:
    path = hundred_cells(folder)
    plain = folder / "plain_server.py"
    plain.write_text(PLAIN_SERVER)
    env = dict(os.environ)
    ours: list[float] = []
    theirs: list[float] = []

    async def main() -> None:
        with open(os.devnull, "w") as quiet:  # the servers' logs
            await both(quiet)

    async def both(quiet: Any) -> None:
        async with AsyncExitStack() as stack:
            sessions = []
            for args in (["-m", "planbook.surfaces.mcp", str(path)], [str(plain)]):
                params = StdioServerParameters(command=sys.executable, args=args, env=env)
                read, write = await stack.enter_async_context(stdio_client(params, errlog=quiet))
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                sessions.append(session)
            planbook_side, plain_side = sessions
            # once each before timing (imports, the first read of the file)
            assert f"{CELLS} cells" in await ok(planbook_side, "read_notebook")
            assert f"{CELLS} cells" in await ok(plain_side, "read_notebook", path=str(path))
            for _ in range(READS):
                started = time.perf_counter()
                text = await ok(planbook_side, "read_notebook")
                ours.append(time.perf_counter() - started)
                assert "value_99" in text
                started = time.perf_counter()
                text = await ok(plain_side, "read_notebook", path=str(path))
                theirs.append(time.perf_counter() - started)
                assert "value_99" in text

    anyio.run(main)
    return ours, theirs


def main() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="planbook-bench-mcp-") as tmp:
        folder = Path(tmp)
        seen = proposal_seen(folder)
        print(f"proposal over HTTP seen by a room client ({PROPOSALS} rounds): {spread(seen)}")
        in_page = proposal_seen_in_page(folder)
        print(
            f"proposal over HTTP seen on the page, collaboration off ({PROPOSALS} rounds): "
            f"{spread(in_page)}"
        )
        ours, theirs = reads(folder)
    print(f"read_notebook of {CELLS} cells, planbook stdio server: {spread(ours)}")
    print(f"read_notebook of {CELLS} cells, plain nbformat server: {spread(theirs)}")
    ratio = statistics.median(ours) / statistics.median(theirs)
    print(f"ratio of medians: {ratio:.2f}x")
    median_seen = statistics.median(seen)
    median_page = statistics.median(in_page)
    return [
        {
            "name": "MCP proposal seen in the room (median)",
            "goal": "<= 1 s",
            "measured": f"{median_seen * 1000:.0f} ms",
            "met": median_seen <= 1.0,
        },
        {
            "name": "MCP proposal seen on its page, collaboration off (median)",
            "goal": "<= 1 s",
            "measured": f"{median_page * 1000:.0f} ms",
            "met": median_page <= 1.0,
        },
        {
            "name": f"MCP read of {CELLS} cells vs plain nbformat server",
            "goal": "<= 2x",
            "measured": f"{ratio:.2f}x",
            "met": ratio <= 2.0,
        },
    ]


if __name__ == "__main__":
    main()
