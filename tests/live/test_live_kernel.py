"""planbook inside a real kernel started by a real JupyterLab server with jupyter-collaboration:
the kernel finds its notebook and edits the shared document; a second client watches."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.live.conftest import disk_sources, on_disk, run
from tests.live.yclient import YClient
from tests.support.jupyter_server import RunningServer, start_jupyter

pytestmark = [pytest.mark.server, pytest.mark.kernel]

OPEN = "import planbook\ns = planbook.session()\n"


def wait_on_disk(server: RunningServer, notebook: str, predicate: Any, what: str) -> None:
    """The server saves a changed room on its own (about a second later)."""
    import time

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if predicate(on_disk(server, notebook)):
                return
        except (ValueError, KeyError, IndexError):
            pass  # caught the file mid-write
        time.sleep(0.2)
    raise AssertionError(f"the server never saved {what}")


def test_the_kernel_finds_its_notebook_and_goes_live(
    server: RunningServer, notebook: str, kernel: dict[str, Any]
) -> None:
    out = run(server, kernel, OPEN + "print(s.document.backend)\nprint(s.document.description)")
    backend, description = out.strip().splitlines()
    assert backend == "live"
    assert notebook in description and "collaboration room" in description


def test_without_collaboration_the_kernel_says_why_and_uses_the_file(
    tmp_path: Any,
) -> None:
    with start_jupyter(tmp_path / "plain", collaboration=False) as plain:
        # planbook's own JupyterLab extension disabled too (as a person may): the file
        page_config = plain.home / "config" / "labconfig" / "page_config.json"
        config = json.loads(page_config.read_text())
        config["disabledExtensions"]["planbook"] = True
        page_config.write_text(json.dumps(config))
        plain.write_notebook("plain.ipynb", ["x = 1"])
        session = plain.create_session("plain.ipynb")
        out = run(plain, session, OPEN + "print(s.document.backend)\nprint(s.document.description)")
        backend, description = out.strip().splitlines()
        assert backend == "file"
        assert "no collaboration on the server" in description
        assert "planbook[live]" in description
        run(plain, session, "s.propose.insert_cell('y = 2', reason='r'); s.approve()")
        assert disk_sources(on_disk(plain, "plain.ipynb"))[-1] == "y = 2"

        # with the extension (what `pip install planbook` gives): the open page is the notebook
        del config["disabledExtensions"]["planbook"]
        page_config.write_text(json.dumps(config))
        plain.write_notebook("paged.ipynb", ["x = 1"])
        paged = plain.create_session("paged.ipynb")
        out = run(plain, paged, OPEN + "print(s.document.backend)\nprint(s.document.description)")
        backend, description = out.strip().splitlines()
        assert backend == "page" and "saving the page saves them" in description


def test_an_approved_plan_appears_in_the_room_and_on_disk(
    server: RunningServer, notebook: str, kernel: dict[str, Any], other: YClient
) -> None:
    run(
        server,
        kernel,
        OPEN
        + """
s.propose.insert_cell("# Results", after="c3", cell_type="markdown", reason="a heading")
s.propose.edit_cell("c2", "x = 41", reason="new value")
s.propose.move_cell("c1", after="c2", reason="imports later")
s.propose.delete_cell("c3", reason="not needed")
report = s.approve()
assert report.ok, report.lines()
""",
    )
    other.flush()
    assert other.ids()[:2] == ["c2", "c1"] and len(other.ids()) == 3
    assert other.sources()[0] == "x = 41"
    assert other.cells()[2]["cell_type"] == "markdown"
    assert "planbook" in other.metadata()  # the plan and its checkpoints, in the shared doc
    wait_on_disk(
        server, notebook, lambda nb: [c["id"] for c in nb["cells"]][:2] == ["c2", "c1"], "the plan"
    )
    assert "planbook" in on_disk(server, notebook)["metadata"]


def test_run_cell_outputs_land_in_the_cell_like_the_frontend_puts_them(
    server: RunningServer, notebook: str, kernel: dict[str, Any], other: YClient
) -> None:
    run(
        server,
        kernel,
        OPEN
        + """
s.propose.insert_cell("print('hello')\\n6 * 7", after="c3", reason="show", run=True)
report = s.approve()
assert report.ok, report.lines()
s.propose.insert_cell("1 / 0", after="c3", reason="fails", run=True)
""",
    )
    # the failing step's traceback may also show in the approving cell: not checked here
    server.execute(kernel["kernel"]["id"], "report = s.approve()")
    assert run(server, kernel, "print(report.ok)").strip() == "False"
    other.flush()
    by_source = {c["source"]: c for c in other.cells()}
    shown = by_source["print('hello')\n6 * 7"]
    kinds = [o["output_type"] for o in shown["outputs"]]
    assert kinds == ["stream", "execute_result"]
    assert shown["outputs"][0]["text"] == "hello\n"
    assert shown["outputs"][1]["data"]["text/plain"] == "42"
    assert shown["execution_count"] is not None
    failed = by_source["1 / 0"]
    assert failed["outputs"][-1]["output_type"] == "error"
    assert failed["outputs"][-1]["ename"] == "ZeroDivisionError"


def test_plan_and_checkpoints_survive_a_kernel_restart(
    server: RunningServer, notebook: str, kernel: dict[str, Any], other: YClient
) -> None:
    before = run(
        server,
        kernel,
        OPEN
        + """
s.propose.edit_cell("c2", "x = 100", reason="bigger")
assert s.approve().ok
print([c.id for c in s.checkpoints()])
""",
    ).strip()
    server.api("POST", f"api/kernels/{kernel['kernel']['id']}/restart")
    after = run(
        server,
        kernel,
        OPEN
        + """
print([c.id for c in s.checkpoints()])
assert s.document.backend == "live"
s.rollback()
""",
    ).strip()
    assert after == before != "[]"
    assert other.wait_for(lambda o: o.sources()[1] == "x = 1")


def test_an_edit_by_someone_else_on_another_cell_is_kept(
    server: RunningServer, notebook: str, kernel: dict[str, Any], other: YClient
) -> None:
    run(server, kernel, OPEN + "s.propose.edit_cell('c2', 'x = 2', reason='r')")
    other.set_source("c3", "print('mine')")
    other.flush()
    run(
        server,
        kernel,
        """
s.document.wait_for(lambda cells: cells[2].source == "print('mine')")
assert s.approve().ok
""",
    )
    other.flush()
    assert other.sources() == ["import math", "x = 2", "print('mine')"]


def test_an_edit_by_someone_else_on_the_target_cell_is_a_conflict(
    server: RunningServer, notebook: str, kernel: dict[str, Any], other: YClient
) -> None:
    run(server, kernel, OPEN + "s.propose.edit_cell('c2', 'x = 2', reason='r')")
    other.set_source("c2", "x = 'mine'")
    other.flush()
    out = run(
        server,
        kernel,
        """
s.document.wait_for(lambda cells: cells[1].source == "x = 'mine'")
report = s.approve()
print(report.outcomes[0].status)
""",
    )
    assert out.strip() == "conflict"
    other.flush()
    assert other.sources()[1] == "x = 'mine'"


def test_after_a_rename_the_kernel_follows_its_session_not_the_stale_env(
    server: RunningServer, notebook: str, kernel: dict[str, Any]
) -> None:
    renamed = "renamed-" + notebook
    server.api("PATCH", f"api/contents/{notebook}", {"path": renamed})
    server.api("PATCH", f"api/sessions/{kernel['id']}", {"path": renamed, "name": renamed})
    out = run(server, kernel, OPEN + "print(s.document.backend)\nprint(s.document.description)")
    backend, description = out.strip().splitlines()
    assert backend == "live"
    assert renamed in description
