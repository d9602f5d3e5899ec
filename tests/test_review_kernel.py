"""The review surfaces in a real kernel: the panel driven through its real message path (a
``comm_msg`` on the shell channel, as the page's widget sends it; approving there equals
``%approve``), and ``%%propose`` sent as JupyterLab sends it (the running cell's id in the
execute request's metadata)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import nbformat
import pytest

from tests.conftest import make_notebook
from tests.kernel_helper import Kernel, kernel

pytestmark = pytest.mark.kernel

T = TypeVar("T")


def send_to_panel(k: Kernel, panel: str, content: dict[str, Any]) -> None:
    """What the page's widget does on a click: a custom message over the panel's comm."""
    comm_id = k.run(f"print({panel}.comm.comm_id)").stdout.strip()
    msg = k.kc.session.msg(
        "comm_msg", {"comm_id": comm_id, "data": {"method": "custom", "content": content}}
    )
    k.kc.shell_channel.send(msg)


def wait_until_settled(k: Kernel, expression: str, timeout: float = 60.0) -> str:
    """Poll an expression in the kernel until it prints something truthy."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        shown = k.run(f"print({expression})").stdout.strip()
        if shown and shown not in ("False", "None", ""):
            return shown
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {expression}")


def saved(
    read: Callable[[nbformat.NotebookNode], T], wanted: T, nb: Path, timeout: float = 30.0
) -> T:
    """What ``read`` reads in the file once it is ``wanted`` (or as it is at the timeout). The
    run is a task on the kernel's loop and a poll runs between its awaits, so a step's status
    can read "done" a moment before the run's last save reaches the file."""
    deadline = time.monotonic() + timeout
    while (got := read(nbformat.read(nb, as_version=4))) != wanted and time.monotonic() < deadline:
        time.sleep(0.1)
    return got


def cell_outputs(nb: Path, cell_id: str, types: list[str]) -> list[dict[str, Any]]:
    """The outputs of ``cell_id`` in the file once they are of ``types``."""

    def outputs(notebook: nbformat.NotebookNode) -> list[dict[str, Any]]:
        [cell] = [c for c in notebook.cells if c.id == cell_id]
        return list(cell.outputs)

    saved(lambda n: [o["output_type"] for o in outputs(n)], types, nb)
    return outputs(nbformat.read(nb, as_version=4))


def test_approving_from_the_panel_keeps_the_last_expression_and_display_data(
    tmp_path: Path,
) -> None:
    nb = make_notebook(tmp_path / "sales.ipynb", ["import pandas as pd", "df = None"])
    with kernel(tmp_path, JPY_SESSION_NAME=str(nb)) as k:
        k.run("%load_ext planbook")
        k.run("import pandas as pd")
        k.run(
            "import planbook; pb = planbook.session()\n"
            "pb.propose.edit_cell('c2', 'from IPython.display import display, Markdown\\n"
            'df = pd.DataFrame({"revenue": [1, 2, 3]})\\n'
            'display(Markdown("**table**"))\\n'
            'print("rows", len(df))\\n'
            "df.describe()', reason='describe the sales', run=True)\n"
            "panel = pb.review()"
        )
        step_id = k.run("print(pb.current_plan().steps[0].id)").stdout.strip()
        shown = json.loads(
            k.run("import json; print(json.dumps(pb.step_hashes(pb.current_plan().steps)))").stdout
        )
        send_to_panel(
            k,
            "panel",
            {"action": "approve", "revision": 1, "step_ids": [step_id], "shown": shown},
        )
        assert wait_until_settled(k, "pb.current_plan().steps[0].status == 'done'") == "True"

        outputs = cell_outputs(nb, "c2", ["display_data", "stream", "execute_result"])
        kinds = [o["output_type"] for o in outputs]
        assert kinds == ["display_data", "stream", "execute_result"], outputs
        assert outputs[0]["data"]["text/markdown"] == "**table**"
        assert outputs[1]["text"] == "rows 3\n"
        result = outputs[2]["data"]
        assert "mean" in result["text/plain"] and "<table" in result["text/html"]
        # the kernel's own machinery still works afterwards: a plain cell shows its result
        assert k.run("1 + 1").outputs[0]["data"]["text/plain"] == "2"


def test_a_failed_step_from_the_panel_puts_its_traceback_in_its_cell(tmp_path: Path) -> None:
    nb = make_notebook(tmp_path / "sales.ipynb", ["x = 1", "x"])
    with kernel(tmp_path, JPY_SESSION_NAME=str(nb)) as k:
        k.run("%load_ext planbook")
        k.run(
            "import planbook; pb = planbook.session()\n"
            "pb.propose.edit_cell('c2', 'print(\"before\")\\nmissing_name', run=True)\n"
            "panel = pb.review()"
        )
        step_id = k.run("print(pb.current_plan().steps[0].id)").stdout.strip()
        shown = json.loads(
            k.run("import json; print(json.dumps(pb.step_hashes(pb.current_plan().steps)))").stdout
        )
        send_to_panel(
            k,
            "panel",
            {"action": "approve", "revision": 1, "step_ids": [step_id], "shown": shown},
        )
        # The next click needs the run over, not only its step settled: a step's status is
        # final before the run's end is saved, and a click in between is told "a run is in
        # progress" (as a person clicking then would be), which this test met under load.
        over = "not panel.running"
        failed = f"pb.current_plan().steps[0].status == 'failed' and {over}"
        assert wait_until_settled(k, failed) == "True"
        outputs = cell_outputs(nb, "c2", ["stream", "error"])
        assert [o["output_type"] for o in outputs] == ["stream", "error"]
        assert outputs[1]["ename"] == "NameError"

        # Retry from the panel once the name exists: the cell's code runs again, in its cell.
        k.run("missing_name = 'found'")
        send_to_panel(k, "panel", {"action": "retry", "revision": 1, "step_id": step_id})
        done = f"pb.current_plan().steps[-1].status == 'done' and {over}"
        assert wait_until_settled(k, done) == "True"
        statuses = k.run("print([s.status for s in pb.current_plan().steps])").stdout.strip()
        assert statuses == "['failed', 'done']"
        outputs = cell_outputs(nb, "c2", ["stream", "execute_result"])
        assert [o["output_type"] for o in outputs] == ["stream", "execute_result"]
        assert outputs[1]["data"]["text/plain"] == "'found'"

        # Roll back this step: the failed edit is undone, the cell is as it was.
        checkpoint = k.run("print(pb.current_plan().steps[0].checkpoint)").stdout.strip()
        send_to_panel(k, "panel", {"action": "rollback", "checkpoint": checkpoint})
        wait_until_settled(k, "len(pb.checkpoints()) == 3")
        sources = saved(lambda n: [c.source for c in n.cells], ["x = 1", "x"], nb)
        assert sources == ["x = 1", "x"]


def test_propose_without_an_anchor_goes_right_after_the_running_cell(tmp_path: Path) -> None:
    nb = make_notebook(tmp_path / "sales.ipynb", ["x = 1", "%%propose\nx + 1", "x"])
    with kernel(tmp_path, JPY_SESSION_NAME=str(nb)) as k:
        k.run("%load_ext planbook")
        for reason, code in (("first", "y = x + 1"), ("second", "z = y + 1")):
            staged = k.run_in_cell(f"%%propose --reason {reason}\n{code}", "c2")
            assert staged.status == "ok" and "staged" in staged.text, staged.text
        # no cellId (nbclient, VS Code, a console): one clear line, nothing staged
        refused = k.run("%%propose\nw = 0")
        assert "UsageError" in refused.stderr and "--after #3" in refused.stderr
        assert "Traceback" not in refused.text
        # a cellId the notebook does not have (an unsaved cell)
        unsaved = k.run_in_cell("%%propose\nw = 0", "not-saved-yet")
        assert "UsageError" in unsaved.text and "is not in" in unsaved.text, unsaved.text
        count = k.run("import planbook; print(len(planbook.session().current_plan().steps))")
        assert count.stdout.strip() == "2", (count.status, count.text)
        report = k.run("%approve")
        assert "step 2 (insert_cell): done" in report.stdout, report.text
        sources = [c.source for c in nbformat.read(nb, as_version=4).cells]
        assert sources == ["x = 1", "%%propose\nx + 1", "y = x + 1", "z = y + 1", "x"]


def test_a_step_run_honours_a_trailing_semicolon_and_its_prompts_agree(tmp_path: Path) -> None:
    """A cell planbook runs looks like one the person ran: `;` hides the last value, and the
    cell's In [n] is its Out [n]."""
    nb = make_notebook(tmp_path / "quiet.ipynb", ["x = 1", "x"])
    with kernel(tmp_path, JPY_SESSION_NAME=str(nb)) as k:
        k.run("%load_ext planbook")
        k.run(
            "import planbook; pb = planbook.session()\n"
            "pb.propose.edit_cell('c1', 'x = 41\\nx + 1;', run=True)\n"
            "pb.propose.edit_cell('c2', 'x + 1', run=True)"
        )
        k.run("%plan")  # what %approve approves: the plan as shown
        assert "step 2" in k.run("%approve").text
        quiet, loud = nbformat.read(nb, as_version=4).cells
        assert quiet.outputs == [], quiet.outputs
        (result,) = loud.outputs
        assert result["data"]["text/plain"] == "42"
        assert result["execution_count"] == loud.execution_count


def test_steps_that_run_code_leave_no_hook_behind_in_the_kernel(tmp_path: Path) -> None:
    """Each step that ran code left two execution hooks on the kernel (its display catcher's),
    called by every cell run after it for the kernel's life: after 1,000 steps each cell the
    person ran called 2,000 of them. A step's displays still reach its own cell."""
    nb = make_notebook(tmp_path / "hooks.ipynb", ["x = 1", "x", "y = 2"])
    with kernel(tmp_path, JPY_SESSION_NAME=str(nb)) as k:
        k.run("%load_ext planbook")
        count = "print(sum(map(len, get_ipython().events.callbacks.values())))"
        k.run("import planbook; pb = planbook.session()")
        before = int(k.run(count).stdout)
        k.run(
            "pb.propose.run_cell('c1')\n"
            "pb.propose.edit_cell('c2', 'from IPython.display import display\\n"
            "display(x + 1)\\nx + 2', run=True)\n"
            "pb.propose.run_cell('c3')"
        )
        k.run("%plan")
        assert "step 3" in k.run("%approve").text
        assert int(k.run(count).stdout) == before
        outputs = nbformat.read(nb, as_version=4).cells[1].outputs
        assert [o["data"]["text/plain"] for o in outputs] == ["2", "3"]


def test_a_step_whose_code_approves_another_plan_keeps_each_output_in_its_cell(
    tmp_path: Path,
) -> None:
    """The kernel's output catchers are lent to each step's run; a run nested in a step's
    code (it approves a plan of another notebook) catches into its own cell, and the outer
    step's result after it still reaches the outer cell."""
    nb = make_notebook(tmp_path / "outer.ipynb", ["x = 1"])
    other = make_notebook(tmp_path / "inner.ipynb", ["y = 2"])
    with kernel(tmp_path, JPY_SESSION_NAME=str(nb)) as k:
        k.run("%load_ext planbook")
        k.run(
            "import planbook; pb = planbook.session()\n"
            f"inner = planbook.session(notebook={str(other)!r}, live=False)\n"
            "inner.propose.edit_cell('c1', 'print(\"inner\")', run=True)\n"
            "pb.propose.edit_cell('c1', 'print(\"before\")\\n"
            "assert inner.approve().ok\\n41 + 1', run=True)"
        )
        k.run("%plan")
        assert "step 1" in k.run("%approve").text
        (outer,) = nbformat.read(nb, as_version=4).cells
        (nested,) = nbformat.read(other, as_version=4).cells
        shown = [o.get("text") or o["data"]["text/plain"] for o in outer.outputs]
        assert shown == ["before\n", "42"], outer.outputs
        assert [o.get("text") for o in nested.outputs] == ["inner\n"], nested.outputs
