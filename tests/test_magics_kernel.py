"""The magics in a real IPython kernel (jupyter_client), editing a real notebook file."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import nbformat
import pytest

from tests.conftest import make_notebook, sources
from tests.kernel_helper import kernel

pytestmark = pytest.mark.kernel


@pytest.fixture
def nb(tmp_path: Path) -> Path:
    return make_notebook(tmp_path / "sales.ipynb", ["import math", "x = 21", "x * 2"])


def saved_statuses(nb_path: Path) -> list[str]:
    plans = (
        json.loads(nb_path.read_text())["metadata"].get("planbook", {}).get("plans", {}).values()
    )
    return [s["status"] for plan in plans for s in plan["revisions"][-1]["steps"]]


def cell(nb_path: Path, cell_id: str) -> nbformat.NotebookNode:
    for c in nbformat.read(nb_path, as_version=4).cells:
        if c.id == cell_id:
            return c
    raise AssertionError(f"no cell {cell_id}")


def test_propose_review_approve_rollback_in_a_kernel(nb: Path) -> None:
    with kernel(nb.parent, JPY_SESSION_NAME=str(nb)) as k:
        loaded = k.run("%load_ext planbook")
        assert "notebook opens at first use" in loaded.stdout and "mode plan" not in loaded.stdout
        # %load_ext costs the same on any notebook (issue 25): it opens nothing, and imports
        # neither pydantic nor the Session
        light = k.run(
            "import sys; print(sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic' "
            "or m.startswith(('planbook.sessions.session', 'planbook.documents.file'))))"
        )
        assert light.stdout.strip() == "[]", light.text
        # the first magic opens the notebook and says what it opened, once
        first = k.run("%mode")
        assert (
            "planbook: mode plan · notebook: file: sales.ipynb (from JPY_SESSION_NAME"
            in first.stdout
        ), first.text
        assert k.run("%mode").stdout == "planbook: mode plan\n"
        # no validator stack, no agent until asked (issue 10, item 7)
        heavy = k.run(
            "import sys; print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('nbformat', 'jsonschema', 'pydantic_ai') or m == 'planbook.agent.run'))"
        )
        assert heavy.stdout.strip() == "[]"
        # ...and no pydantic validator built (the first one makes pydantic scan every
        # installed distribution for plugins): a notebook without a plan needs none
        built = k.run(
            "from planbook.model.base import PlanbookModel\n"
            "def below(c): return [d for s in c.__subclasses__() for d in (s, *below(s))]\n"
            "print(len(below(PlanbookModel)), "
            "sorted(c.__name__ for c in below(PlanbookModel) if c.__pydantic_complete__))"
        )
        count, names = built.stdout.split(" ", 1)
        assert int(count) > 10 and names.strip() == "[]", built.stdout
        k.run("x = 21")
        staged = k.run(
            '%%propose --after c2 --run --reason "show doubled"\nprint("doubled", x * 2)'
        )
        assert "staged step 1" in staged.stdout
        k.run('%%propose --replace c3 --reason "bigger"\nx * 3')
        assert [s for _, s in sources(nb)] == ["import math", "x = 21", "x * 2"]

        shown = k.run("%plan")
        # the review panel, with the plan as markdown for frontends without widgets
        assert "application/vnd.jupyter.widget-view+json" in shown.outputs[0]["data"]
        markdown = shown.outputs[0]["data"]["text/markdown"]
        assert "insert code cell" in markdown and '+print("doubled", x * 2)' in markdown
        assert "-x * 2" in markdown and "+x * 3" in markdown
        assert "> show doubled\n" in markdown and '"show doubled"' not in markdown

        before = nb.read_bytes()
        k.run("%plan text")  # %approve approves what this kernel showed
        dry = k.run("%approve --dry-run")
        assert "step 1 (insert_cell): would run" in dry.stdout
        assert "step 2 (edit_cell): would run" in dry.stdout and "nothing was applied" in dry.stdout
        assert nb.read_bytes() == before

        approved = k.run("%approve 1")
        assert "step 1 (insert_cell): done" in approved.stdout, approved.text
        new_id = sources(nb)[2][0]
        new = cell(nb, new_id)
        assert new.source == 'print("doubled", x * 2)'
        assert new.outputs[0]["text"] == "doubled 42\n" and new.execution_count
        assert cell(nb, "c3").source == "x * 2"

        listed = k.run("%checkpoints")
        assert "1. before step 1: insert a cell, show doubled  (cp-" in listed.stdout
        rolled = k.run("%rollback")
        assert "rolled back 1 step" in rolled.stdout and "Variables in the kernel" in rolled.stdout
        assert "(rollback to before step 1: insert a cell, show doubled)" in rolled.stdout
        assert [s for _, s in sources(nb)] == ["import math", "x = 21", "x * 2"]


def test_run_cell_outputs_and_a_failure_that_stops_the_run(nb: Path) -> None:
    with kernel(nb.parent, JPY_SESSION_NAME=str(nb)) as k:
        k.run("%load_ext planbook")
        k.run("import planbook; pb = planbook.session()")
        k.run(
            "pb.propose.run_cell('c2', reason='define x'); pb.propose.run_cell('c3', reason='show')"
        )
        k.run(
            "pb.propose.edit_cell('c1', 'raise ValueError(\"bad data\")', reason='break', run=True)"
        )
        k.run("pb.propose.edit_cell('c2', 'x = 0', reason='after the failure')")
        k.run("%plan text")  # %approve approves what this kernel showed
        result = k.run("%approve")
        assert "step 3 (edit_cell): failed" in result.stdout, result.text
        assert "raised ValueError: bad data" in result.stdout
        # the traceback lands in the failing cell, not in the cell that approved
        assert result.status == "ok" and result.error == ""
        assert cell(nb, "c3").outputs[0]["data"]["text/plain"] == "42"
        assert cell(nb, "c3").outputs[0]["output_type"] == "execute_result"
        error = cell(nb, "c1").outputs[-1]
        assert error["output_type"] == "error" and error["ename"] == "ValueError"
        assert cell(nb, "c2").source == "x = 21"
        plan = k.run("print([s.status for s in pb.plan.steps])")
        assert plan.stdout.strip() == "['done', 'done', 'failed', 'pending']"


BAD_INPUT = [
    ("%approve 0", "start at 1"),
    ("%approve 99", "there is no step 99"),
    ("%approve --first 5", "only 1 pending"),
    ("%approve x", "`x` is not a step number"),
    ("%plan skip 7", "there is no step 7"),
    ("%plan move 1 sideways 2", "usage: `%plan move N before M`"),
    ("%plan bogus", "not a %plan command"),
    ("%rollback", "no step has run yet"),
    ("%rollback cp-unknown", "no step has run yet"),
    ("%mode loud", "unknown mode `loud`"),
    ("%%propose --after nope\nx = 1", "cell 'nope' is not in the saved file yet"),
    ("%%propose --after c1 --replace c2\nx = 1", "--replace takes no --after or --before"),
]


def test_bad_input_is_a_one_line_usage_error_and_changes_nothing(nb: Path) -> None:
    with kernel(nb.parent, JPY_SESSION_NAME=str(nb)) as k:
        k.run("%load_ext planbook")
        k.run('%%propose --after c1 --reason "one"\ny = 1')
        before = nb.read_bytes()
        for line, message in BAD_INPUT:
            reply = k.run(line)
            assert reply.status == "error", line
            assert "UsageError" in reply.stderr and message in reply.stderr, (line, reply.text)
            assert "Traceback" not in reply.text, line
            assert nb.read_bytes() == before, line
        with_empty_plan = k.run("%reject")
        assert "rejected 1 step" in with_empty_plan.stdout
        empty = k.run("%approve")
        assert "UsageError" in empty.stderr and "no step is pending" in empty.stderr


def test_the_pending_plan_survives_a_kernel_restart(nb: Path) -> None:
    with kernel(nb.parent, JPY_SESSION_NAME=str(nb)) as k:
        k.run("%load_ext planbook")
        k.run('%%propose --replace c2 --reason "restart me"\nx = 100')
        k.restart()
        k.run("%load_ext planbook")
        shown = k.run("%plan text")  # %approve approves what this kernel showed
        assert "restored with 1 pending step" in shown.stdout, shown.text
        assert "step 1 (edit_cell): done" in k.run("%approve").stdout
    assert cell(nb, "c2").source == "x = 100"


def test_corrupted_metadata_is_reported_at_load_and_left_alone(nb: Path) -> None:
    data = nbformat.read(nb, as_version=4)
    data.metadata["planbook"] = {"schema_version": 1, "plans": [{"state": "flying"}]}
    nbformat.write(data, nb)
    raw = nb.read_bytes()
    with kernel(nb.parent, JPY_SESSION_NAME=str(nb)) as k:
        k.run("%load_ext planbook")
        reply = k.run("%%propose --after c1\ny = 1")
        # the first magic says what opening found, then refuses in one line
        assert "corrupted at plans.0" in reply.stderr and "left untouched" in reply.stderr
        assert "UsageError" in reply.stderr and "corrupted" in reply.stderr.split("UsageError")[1]
    assert nb.read_bytes() == raw


def test_a_kernel_interrupt_mid_run_leaves_the_rest_pending(nb: Path) -> None:
    with kernel(nb.parent, JPY_SESSION_NAME=str(nb)) as k:
        k.run("%load_ext planbook")
        k.run("import planbook; pb = planbook.session()")
        k.run(
            "pb.propose.edit_cell('c1', 'import time\\nprint(\"sleeping\", flush=True)\\n"
            "time.sleep(30)', reason='slow', run=True)"
        )
        k.run("pb.propose.edit_cell('c2', 'x = 0', reason='later')")

        def interrupt_when_running() -> None:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                if "running" in saved_statuses(nb):
                    time.sleep(1.0)
                    k.km.interrupt_kernel()
                    return
                time.sleep(0.1)

        thread = threading.Thread(target=interrupt_when_running)
        thread.start()
        k.run("%plan text")  # %approve approves what this kernel showed
        result = k.run("%approve", timeout=60)
        thread.join()
        assert "step 1 (edit_cell): failed" in result.stdout and "interrupted" in result.stdout, (
            result.text
        )
        statuses = k.run("print([s.status for s in pb.plan.steps])").stdout.strip()
        assert statuses == "['failed', 'pending']"
        assert "KeyboardInterrupt" in str(cell(nb, "c1").outputs)
        assert cell(nb, "c2").source == "x = 21"
        assert k.run("print(1 + 1)").stdout == "2\n"  # the kernel is still usable


def test_a_cell_step_leaves_the_kernel_display_machinery_working(nb: Path) -> None:
    """ipykernel and ipywidgets reach into display_pub while a cell step runs."""
    with kernel(nb.parent, JPY_SESSION_NAME=str(nb)) as k:
        k.run("%load_ext planbook")
        k.run(
            "import planbook; pb = planbook.session()\n"
            "pb.propose.edit_cell('c1', 'ip = get_ipython()\\n"
            "ip.display_pub.set_parent(ip.parent_header)\\n"
            "from IPython.display import display, Markdown\\n"
            'display(Markdown("**shown**"))\\nprint("after")\', reason=\'display\', run=True)'
        )
        k.run("%plan text")  # %approve approves what this kernel showed
        result = k.run("%approve")
        assert "step 1 (edit_cell): done" in result.stdout, result.text
        outputs = cell(nb, "c1").outputs
        assert outputs[0]["data"]["text/markdown"] == "**shown**"
        assert outputs[1]["text"] == "after\n"
        assert k.run("from IPython.display import display; display('back')").outputs
