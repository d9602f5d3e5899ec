"""The scripted agent runs offline in a notebook executed top to bottom (as nbval would)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.kernel

CELLS = [
    "%load_ext planbook\n"
    "from planbook.surfaces.magics_agent import register\n"
    "register(get_ipython())",
    "import planbook\n"
    "from planbook.agents import Call, Scripted\n"
    "demo = Scripted([\n"
    "    ('list_cells', {}),\n"
    "    Call('write_file', {'path': 'report.md', 'content': '# Sales\\n', 'reason': 'start'},\n"
    "         delay=0.1),\n"
    "    ('present_plan', {'summary': 'Write the report skeleton.'}),\n"
    "])",
    "%config Planbook.model = demo",
    "run = await planbook.session().plan('start the report')\n"
    "import os\n"
    "print(run.status, os.path.exists('report.md'))",
    "report = planbook.session().approve()\nprint(report.ok, open('report.md').read().strip())",
    "planbook.session().set_mode('act')\n"
    "run = await planbook.session().plan('start the report again')\n"
    "print(run.status, [s.status for s in planbook.session().current_plan().steps])",
    "print(next(a.message for a in run.activity if a.message.startswith('plan presented')))",
]


def test_scripted_demo_notebook_runs_offline(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(src) for src in CELLS]
    client = NotebookClient(
        nb, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    texts = [
        "".join(o.get("text", "") for o in c.outputs if o["output_type"] == "stream")
        for c in nb.cells
    ]
    assert texts[3].strip() == "finished False"  # plan mode: staged, not written
    assert texts[4].strip() == "True # Sales"  # approved: now it exists
    assert texts[5].strip() == "finished ['done']"  # act mode: applied at once
    # ...and the log says so, not that the plan awaits an approval nobody needs to give
    assert texts[6].strip() == "plan presented with 1 step: 1 applied"
    assert not any(o["output_type"] == "error" for c in nb.cells for o in c.outputs)
