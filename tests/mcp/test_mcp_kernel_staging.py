"""MCP over HTTP on a Jupyter server with collaboration switched off, where the open page holds
the notebook: a proposal to a notebook whose kernel has a page connected goes through that
kernel (planbook's own silent call), never into the file the page would overwrite. Without a
browser, a "page" here is what the server counts as one, a websocket to the kernel; the page's
own review is tests/browser/test_mcp_page_rtc_off.py. Each case gets one line, and the file
keeps no step it should not: a kernel with no page (the file, as before), planbook not loaded,
a busy kernel, a kernel that dies mid-call, and hostile arguments that never run as code."""

from __future__ import annotations

import ast
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from planbook.surfaces.mcp import in_kernel
from planbook.surfaces.mcp.kernel_staging import GRACE_SECONDS, STAGE_SECONDS, expression
from tests.mcp.test_mcp_http import notebook, planbook_steps
from tests.support.jupyter_server import RTC_OFF, RunningServer
from tests.support.mcp_client import ok, refused
from tests.support.mcp_http import connect_http, with_endpoint

pytestmark = [pytest.mark.server, pytest.mark.kernel]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    running = with_endpoint(
        RunningServer(tmp_path_factory.mktemp("mcp-kernel-root"), extra_args=[RTC_OFF])
    )
    try:
        yield running.start()
    finally:
        running.close()


@contextmanager
def page_connected(server: RunningServer, kernel_id: str) -> Iterator[None]:
    """A websocket to the kernel, held open: what the server counts as an open page."""
    import websocket  # websocket-client, a dependency of jupyter_server

    ws = websocket.create_connection(server.ws_url(f"api/kernels/{kernel_id}/channels"))
    try:
        yield
    finally:
        ws.close()


def not_loaded_line(name: str) -> str:
    """The one line for a page's kernel without planbook (over HTTP and over stdio)."""
    return (
        f"{name} is open in Jupyter, but planbook is not loaded in its kernel: the page could "
        "not show the step and its next save would overwrite a step written to the file, so "
        "nothing was staged; ask the person to run `%load_ext planbook` in the notebook, then "
        "propose again"
    )


def busy_line(name: str) -> str:
    return (
        f"the kernel of {name} is busy (a cell has run for over 10 s): nothing was staged (the "
        "request expires unanswered); propose again when the kernel is idle"
    )


def died_line(name: str) -> str:
    return (
        f"the kernel of {name} stopped before it answered (it died or was restarted): the step "
        "was not written to the file; if it was staged, the open page's plan shows it: "
        "read_plan before proposing again"
    )


def busy_for(server: RunningServer, kernel_id: str, seconds: float) -> threading.Thread:
    """A cell that sleeps ``seconds`` in the kernel, started (its websocket is a "page")."""
    running = threading.Thread(
        target=server.execute, args=(kernel_id, f"import time; time.sleep({seconds})"), daemon=True
    )
    running.start()
    time.sleep(1.0)
    return running


def stopped_under_a_call(
    server: RunningServer, kernel_id: str, how: str, after: float, *, joined: bool = False
) -> None:
    """A long cell runs, and the kernel is stopped ``how`` (STOPS) ``after`` seconds later, or
    (``joined``) ``after`` seconds after one more websocket joined the kernel than while the
    cell runs: a caller that starts slowly, such as a new ``planbook mcp`` process, is then
    under its call, where a fixed delay raced its start on a loaded machine."""
    threading.Thread(
        target=lambda: _quietly(server.execute, kernel_id, "import time; time.sleep(30)"),
        daemon=True,
    ).start()
    time.sleep(0.5)
    method, where = STOPS[how]

    def model() -> dict[str, Any]:
        return server.api("GET", f"api/kernels/{kernel_id}") or {}

    def stop() -> None:
        deadline = time.monotonic() + 60
        if joined:
            while model().get("execution_state") != "busy" and time.monotonic() < deadline:
                time.sleep(0.05)  # the cell's own websocket is in the count from here
            running = int(model().get("connections", 0))
            while int(model().get("connections", 0)) <= running and time.monotonic() < deadline:
                time.sleep(0.05)
        time.sleep(after)
        server.api(method, where.format(kernel_id))

    threading.Thread(target=stop, daemon=True).start()


def propose(server: RunningServer, **arguments: Any) -> tuple[bool, str]:
    """One propose_edit_cell from a client of its own: (refused?, its text)."""

    async def main() -> tuple[bool, str]:
        async with connect_http(server, name="cursor", version="3") as session:
            result = await session.call_tool("propose_edit_cell", arguments)
            return bool(result.is_error), "".join(getattr(c, "text", "") for c in result.content)

    return anyio.run(main)


def test_a_kernel_no_page_is_connected_to_leaves_the_file_route(server: RunningServer) -> None:
    path = notebook(server, "headless.ipynb")
    kernel = server.create_session("headless.ipynb")["kernel"]["id"]
    try:
        assert server.execute(kernel, "%load_ext planbook")["error"] is None
        # no websocket is open now: nothing holds the notebook but the file
        refused_, answer = propose(
            server, notebook="headless.ipynb", cell="show", source="print(2)", reason="r"
        )
        assert not refused_ and answer.startswith("Staged step 1 of the plan in headless.ipynb")
        [step] = planbook_steps(path)
        assert step["origin"] == "cursor 3 (MCP)"
    finally:
        server.end_sessions()


def test_planbook_not_loaded_in_the_pages_kernel_stages_nothing(server: RunningServer) -> None:
    path = notebook(server, "unloaded.ipynb")
    before = path.read_bytes()
    kernel = server.create_session("unloaded.ipynb")["kernel"]["id"]
    try:
        with page_connected(server, kernel):
            refused_, line = propose(
                server, notebook="unloaded.ipynb", cell="show", source="print(2)", reason="r"
            )
        assert refused_ and "\n" not in line
        assert line.endswith(not_loaded_line("unloaded.ipynb")), line
        assert path.read_bytes() == before
        # the person's kernel is as it was: planbook was not imported into it
        loaded = server.execute(kernel, "import sys; print('planbook' in sys.modules)")
        assert loaded["stdout"].strip() == "False"
    finally:
        server.end_sessions()


def test_a_busy_kernel_is_said_in_one_line_and_the_late_request_stages_nothing(
    server: RunningServer,
) -> None:
    path = notebook(server, "busy.ipynb")
    before = path.read_bytes()
    kernel = server.create_session("busy.ipynb")["kernel"]["id"]
    try:
        assert server.execute(kernel, "%load_ext planbook")["error"] is None
        running = busy_for(server, kernel, 16)
        started = time.monotonic()
        refused_, line = propose(
            server, notebook="busy.ipynb", cell="show", source="print(2)", reason="r"
        )
        waited = time.monotonic() - started
        assert refused_ and line.endswith(busy_line("busy.ipynb")), line
        assert STAGE_SECONDS <= waited < STAGE_SECONDS + GRACE_SECONDS + 3.0
        running.join(30)
        # the kernel reached the queued request after it expired: nothing anywhere
        time.sleep(1.0)
        assert path.read_bytes() == before
        said = server.execute(
            kernel,
            "import planbook.surfaces.api as a; s = a.kernel_session_if_open(); "
            "print(s is None or s.current_plan() is None)",
        )
        assert said["stdout"].strip() == "True"
    finally:
        server.end_sessions()


#: How the kernel stops under the call: shut down, or restarted (a new process that never
#: heard the request).
STOPS = {"shut down": ("DELETE", "api/kernels/{}"), "restarted": ("POST", "api/kernels/{}/restart")}


@pytest.mark.parametrize("how", list(STOPS))
def test_a_kernel_that_stops_mid_call_is_said_in_one_line(server: RunningServer, how: str) -> None:
    path = notebook(server, "dies.ipynb")
    before = path.read_bytes()
    kernel = server.create_session("dies.ipynb")["kernel"]["id"]
    try:
        assert server.execute(kernel, "%load_ext planbook")["error"] is None
        stopped_under_a_call(server, kernel, how, after=2.0)
        started = time.monotonic()
        refused_, line = propose(
            server, notebook="dies.ipynb", cell="show", source="print(2)", reason="r"
        )
        assert refused_ and line.endswith(died_line("dies.ipynb")), line
        assert time.monotonic() - started < STAGE_SECONDS  # not the busy wait
        assert path.read_bytes() == before
    finally:
        server.end_sessions()


def _quietly(call: Any, *args: Any) -> None:
    try:
        call(*args, timeout=40)
    except Exception:  # the kernel is shut down under it, as intended
        return


def hostile_sources(marker: Path) -> list[str]:
    """Sources (and a cell name) that would write ``marker`` if any part ran as code."""
    touch = f"open({str(marker)!r}, 'w')"
    return [
        f"'); {touch} #",
        f'"); {touch} #',
        f"'''); {touch} #",
        f'"""); {touch} #',
        f"\\'); {touch} #",
        f"x\u2028{touch}",
        f"\\\\\\'\"\"\" + {touch} + '''",
        "y = 1\n" * 160_000 + touch,  # about 1 MB
    ]


def test_hostile_arguments_never_run_as_code_in_the_kernel(
    server: RunningServer, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    notebook(server, "hostile.ipynb")
    kernel = server.create_session("hostile.ipynb")["kernel"]["id"]
    try:
        assert server.execute(kernel, "%load_ext planbook")["error"] is None

        async def main() -> None:
            async with connect_http(server, name="evil", version="1") as session:
                for source in hostile_sources(marker):
                    # through the kernel's call (no page is linked in it, so the kernel says
                    # so and the step goes to the file): staged as text, run by nothing
                    answer = await ok(
                        session,
                        "propose_edit_cell",
                        notebook="hostile.ipynb",
                        cell="show",
                        source=source,
                        reason=source[:200],
                    )
                    assert answer.startswith("Staged step"), answer[:200]
                for cell in (f"show'); {marker_touch(marker)} #", f"x\u2028{marker_touch(marker)}"):
                    await refused(
                        session,
                        "propose_edit_cell",
                        notebook="hostile.ipynb",
                        cell=cell,
                        source="1",
                        reason="r",
                    )

        with page_connected(server, kernel):
            anyio.run(main)
        assert not marker.exists()
        # every proposal went through the kernel's call (which found no page linked there)
        called = server.execute(
            kernel, "import sys; print('planbook.surfaces.mcp.in_kernel' in sys.modules)"
        )
        assert called["stdout"].strip() == "True"
        steps = planbook_steps(server.root / "hostile.ipynb")
        assert [s["operation"]["source"] for s in steps] == hostile_sources(marker)
    finally:
        server.end_sessions()


def marker_touch(marker: Path) -> str:
    return f"open({str(marker)!r}, 'w')"


def test_the_kernels_call_takes_its_request_as_data_and_refuses_a_late_one() -> None:
    late = json.dumps(
        {
            "notebook": "/nowhere/x.ipynb",
            "shown": "x.ipynb",
            "operation": "edit_cell",
            "arguments": {"cell_id": "a", "source": "1"},
            "origin": "o (MCP)",
            "expires": time.time() - 1,
        }
    )
    assert json.loads(in_kernel.stage(late)) == {"status": "expired"}
    bad = json.loads(in_kernel.stage('{"operation": "approve"}'))
    assert bad["status"] == "error" and "malformed" in bad["message"]
    # the expression holds the request as one string literal, whatever it carries
    text = "'''\"\"\"\\\u2028"
    built = expression("stage", {"source": text})
    literal = built.split(".stage(", 1)[1].rsplit(") if 'planbook'", 1)[0]
    assert json.loads(ast.literal_eval(literal))["source"] == text  # a literal, nothing more
    assert literal.isascii()
