"""The kernel's variables over MCP, through the official SDK's clients: over HTTP the endpoint asks
the kernel of the notebook's Jupyter session; over stdio, the kernel of the running Jupyter server
that has the notebook open. The listing and the detail are the agent's bounded inspection; what
runs in the kernel is planbook's own silent expression (no history, no output, nothing left in
the namespace), and a hostile name runs nothing. No kernel: one line saying so."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tests.support.jupyter_server import RunningServer
from tests.support.mcp_client import connect, ok, refused
from tests.support.mcp_http import connect_http, with_endpoint

pytestmark = [pytest.mark.server, pytest.mark.kernel]

SETUP = (
    "import pandas as pd\n"
    "df = pd.DataFrame({'a': [1, 2, 3], 'b': ['x', 'y', 'z']})\n"
    "x = 41\n"
    "names = ['ada', 'grace']\n"
    "def helper(): return 1\n"
)
#: What the person's kernel looks like from a cell: its history length and its names.
SNAPSHOT = "print(len(In), sorted(k for k in globals() if not k.startswith('_')))"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    running = with_endpoint(RunningServer(tmp_path_factory.mktemp("mcp-vars-root")))
    try:
        running.start()
        running.write_notebook("vars.ipynb", ["x = 41"], ids=["load"])
        running.write_notebook("idle.ipynb", ["1"], ids=["one"])
        kernel = running.create_session("vars.ipynb")["kernel"]["id"]
        done = running.execute(kernel, SETUP, timeout=120)
        assert done["error"] is None, done["error"]
        running.kernel_id = kernel  # type: ignore[attr-defined]
        yield running
    finally:
        running.close()


def hostile_names(marker: Path) -> list[str]:
    """Names that would write ``marker`` if any part of them were run as code."""
    touch = f"open({str(marker)!r}, 'w')"
    return [
        f"__import__('builtins').{touch}",
        f"x; {touch}",
        f"x')+{touch}+('",
        f'x"); {touch} #',
        f"x\n{touch}",
        f"df.to_csv({str(marker)!r})",
        f"[{touch} for _ in 'a']",
        "import",
    ]


def test_over_http_the_kernel_of_the_notebooks_session_is_read(
    server: RunningServer, tmp_path: Path
) -> None:
    kernel = server.kernel_id  # type: ignore[attr-defined]
    before = server.execute(kernel, SNAPSHOT)["stdout"]
    marker = tmp_path / "ran"

    async def main() -> None:
        async with connect_http(server, name="claude-code", version="2") as session:
            listing = await ok(session, "read_variables", notebook="vars.ipynb")
            lines = listing.splitlines()
            assert lines[0] == "4 variables (name: type, shape or length, short value):"
            assert "df: pandas.DataFrame, shape (3, 2)" in lines
            assert "x: int = 41" in lines
            assert "names: list, len 2 = ['ada', 'grace']" in lines
            assert "helper: function" in lines
            # the kernel's own names and modules are not the person's variables
            for hidden in ("pd:", "In:", "Out:", "get_ipython:", "exit:"):
                assert not any(line.startswith(hidden) for line in lines), hidden
            detail = await ok(session, "read_variables", notebook="vars.ipynb", name="df")
            assert detail.startswith("df: pandas.DataFrame\nshape: (3, 2)")
            assert "columns: ['a', 'b']" in detail and "head:" in detail
            missing = await ok(session, "read_variables", notebook="vars.ipynb", name="nope")
            assert missing.startswith("no variable 'nope' in the user's namespace; defined: ")
            assert "df, " in missing
            for name in hostile_names(marker):
                line = await refused(session, "read_variables", notebook="vars.ipynb", name=name)
                assert "is not a plain variable name" in line and "nothing is evaluated" in line
            long = await refused(session, "read_variables", notebook="vars.ipynb", name="a" * 2000)
            assert "invalid argument `name`" in long
            idle = await refused(session, "read_variables", notebook="idle.ipynb")
            assert idle.endswith(": no kernel is attached to idle.ipynb: open it in Jupyter")

    anyio.run(main)
    assert not marker.exists()
    # the person's kernel is as it was: no history entry, no new name (the snapshot cell
    # itself is the one new entry of In)
    after = server.execute(kernel, SNAPSHOT)["stdout"]
    count_before, names_before = before.split(" ", 1)
    count_after, names_after = after.split(" ", 1)
    assert int(count_after) == int(count_before) + 1
    assert names_after == names_before


def test_over_stdio_the_kernel_of_the_server_that_has_it_open_is_read(
    server: RunningServer, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    finds_server = {"JUPYTER_RUNTIME_DIR": server.env["JUPYTER_RUNTIME_DIR"]}
    no_server = {"JUPYTER_RUNTIME_DIR": str(tmp_path / "no-runtime")}

    async def main() -> None:
        async with connect(server.root, env=finds_server) as session:
            listing = await ok(session, "read_variables", notebook="vars.ipynb")
            assert "x: int = 41" in listing.splitlines()
            detail = await ok(session, "read_variables", notebook="vars.ipynb", name="names")
            assert detail == "names: builtins.list\nlen: 2\nvalue: ['ada', 'grace']"
            for name in hostile_names(marker):
                await refused(session, "read_variables", notebook="vars.ipynb", name=name)
            idle = await refused(session, "read_variables", notebook="idle.ipynb")
            assert idle.endswith(": no kernel is attached to idle.ipynb: open it in Jupyter")
        async with connect(server.root / "vars.ipynb", env=no_server) as session:
            alone = await refused(session, "read_variables")
            assert alone.endswith(": no kernel is attached to vars.ipynb: open it in Jupyter")

    anyio.run(main)
    assert not marker.exists()


def test_a_busy_kernel_is_said_in_one_line_and_nothing_waits_forever(
    server: RunningServer,
) -> None:
    kernel = server.kernel_id  # type: ignore[attr-defined]
    running = threading.Thread(
        target=server.execute, args=(kernel, "import time; time.sleep(13)"), daemon=True
    )
    running.start()
    time.sleep(1.0)

    async def main() -> float:
        async with connect_http(server) as session:
            started = time.monotonic()
            line = await refused(session, "read_variables", notebook="vars.ipynb")
            assert line.endswith(
                ": the kernel of vars.ipynb did not answer within 10 s (a cell may be running): "
                "ask again when it is idle; nothing ran in it"
            )
            return time.monotonic() - started

    waited = anyio.run(main)
    assert 9.0 <= waited < 12.0
    running.join(30)
