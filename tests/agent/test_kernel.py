"""A run inside a real kernel: the cell returns at once and the kernel stays usable."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.kernel_helper import kernel

pytestmark = pytest.mark.kernel

SETUP = """
import planbook
from planbook.agent.context import decisions_of
from planbook.agents import Scripted
from planbook.documents.memory import MemoryNotebook
from planbook.workspace.files import Workspace
s = planbook.Session(MemoryNotebook(cells=["x = 1"]), Workspace({root!r}))
"""

SCRIPT = """Scripted([
    ("insert_cell", {"source": "y = x + 1", "reason": "add y"}),
    ("ask_user", {"question": "Run it too?", "options": ["yes", "no"]}),
    ("run_cell", {"cell_id": "$new_cell", "reason": "see y"}),
    ("present_plan", {"summary": "Add y and run it."}),
])"""


def test_kernel_stays_responsive_while_the_agent_plans(tmp_path: Path) -> None:
    with kernel(tmp_path) as k:
        assert k.run(SETUP.format(root=str(tmp_path))).status == "ok"
        started = k.run(f"run = s.plan('add y', model={SCRIPT})\nprint(run.status)")
        assert started.status == "ok" and started.stdout.strip() == "running", started.text
        # Let the run get to its question (awaiting in a cell lets the loop run the task)...
        k.run("import asyncio\nwhile not decisions_of(s).pending():\n    await asyncio.sleep(0.05)")
        # ...where it waits for the person, while the kernel answers other cells.
        busy = k.run("print(6 * 7, run.status, [d.question for d in decisions_of(s).pending()])")
        assert busy.stdout.strip() == "42 running ['Run it too?']", busy.text
        assert k.run("print([c.source for c in s.cells()])").stdout.strip() == "['x = 1']"
        k.run("decisions_of(s).answer(decisions_of(s).pending()[0].id, 'yes')")
        done = k.run(
            textwrap.dedent("""
            await run
            print(run.status, [st.operation.kind for st in s.current_plan().steps])
            print([c.source for c in s.cells()])
        """)
        )
        expected = ["finished ['insert_cell', 'run_cell']", "['x = 1']"]
        assert done.stdout.splitlines() == expected, done.text
        assert "y" not in k.run("print(sorted(k for k in globals() if len(k) == 1))").stdout


def test_stop_cancels_a_waiting_run(tmp_path: Path) -> None:
    with kernel(tmp_path) as k:
        k.run(SETUP.format(root=str(tmp_path)))
        k.run(f"run = s.plan('add y', model={SCRIPT})")
        k.run("import asyncio\nwhile not decisions_of(s).pending():\n    await asyncio.sleep(0.05)")
        assert "running" in k.run("print(run.status)").stdout
        k.run("run.stop()")
        out = k.run("await run\nprint(run.status, len(s.current_plan().steps))").stdout
        assert out.strip() == "stopped 1"


def test_magics_drive_the_agent(tmp_path: Path) -> None:
    with kernel(tmp_path) as k:
        assert k.run("%load_ext planbook").status == "ok"
        k.run("from planbook.surfaces.magics_agent import register; register(get_ipython())")
        k.run(f"from planbook.agents import Scripted\nscript = {SCRIPT}")
        configured = k.run("%config Planbook.model = script")
        assert configured.status == "ok", configured.text
        started = k.run('%plan "add y"')
        assert started.status == "ok", started.text
        k.run(
            "import asyncio, planbook\nfrom planbook.agent.context import decisions_of\n"
            "while not decisions_of(planbook.session()).pending():\n"
            "    await asyncio.sleep(0.05)"
        )
        listed = k.run("%answer")
        assert "Run it too?" in listed.stdout, listed.text
        decision_id = listed.stdout.split(":")[0].strip()
        assert k.run(f"%answer {decision_id} yes").status == "ok"
        out = k.run(
            textwrap.dedent("""
            import planbook
            await planbook.session().agent_run
            print(planbook.session().current_plan().state)
        """)
        )
        assert out.stdout.strip() == "awaiting_approval", out.text


def test_plan_stop_ends_the_agent_run_and_keeps_the_plan(tmp_path: Path) -> None:
    with kernel(tmp_path) as k:
        assert k.run("%load_ext planbook").status == "ok"  # registers the agent's magics too
        k.run(f"from planbook.agents import Scripted\nscript = {SCRIPT}")
        assert k.run("%config Planbook.model = script").status == "ok"
        assert k.run('%plan "add y"').status == "ok"
        k.run(
            "import asyncio, planbook\nfrom planbook.agent.context import decisions_of\n"
            "while not decisions_of(planbook.session()).pending():\n"
            "    await asyncio.sleep(0.05)"
        )
        stopped = k.run("%plan stop")
        assert "agent stopped; the plan staged so far is kept" in stopped.stdout, stopped.text
        after = k.run(
            "await asyncio.sleep(0.5)\nprint(len(planbook.session().current_plan().steps))"
        )
        assert after.stdout.strip() == "1", after.text
        assert "no agent run is in progress" in k.run("%plan stop").stdout


def test_act_mode_applies_and_runs_cells_from_the_agent_task(tmp_path: Path) -> None:
    with kernel(tmp_path) as k:
        k.run(SETUP.format(root=str(tmp_path)))
        k.run("x = 1\ns.set_mode('act')")
        call = {"source": "y = x + 41\nprint(y)", "reason": "add y", "run": True}
        out = k.run(
            f"run = await s.plan('add y', model=Scripted([('insert_cell', {call!r})]))\n"
            "print(run.status, run.error)\n"
            "print(y, [st.status for st in s.current_plan().steps], len(s.checkpoints()))\n"
            "print(s.cells()[-1].outputs[0]['text'].strip())\n"
        )
        assert out.stdout.splitlines() == ["finished None", "42 ['done'] 1", "42"], out.text
