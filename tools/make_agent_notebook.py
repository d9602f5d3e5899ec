"""Write notebooks/agent-memory.ipynb: the agent's conversation survives a kernel restart.

The same helpers as tools/make_notebooks.py (cells with stable ids, a copy of the notebook to
work on), in a script of its own so the agent's tutorial is reviewed with the agent's code.

    python tools/make_agent_notebook.py            # write it, without outputs
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_notebooks import Cell, code, copy_cell, md, write_notebooks

NAME = "agent-memory.ipynb"


def agent_memory() -> list[Cell]:
    return [
        md(
            "intro",
            """
# The conversation lives with the notebook

An agent's plan is only half of its work: there are also its messages, its todo list and the
questions it is waiting on. planbook keeps all of them in the notebook's metadata, next to the
plan, so after a kernel restart (or on another machine) `%plan` shows them, `%answer` answers
the question the agent asked before the restart, and `%plan continue` resumes the run where it
stopped, with the whole conversation.

No model is needed: `planbook.agents.Scripted` plays the agent's tool calls offline, through
the same tools and the same policy a real model would use.
""",
        ),
        copy_cell(NAME),
        code("load-ext", "%load_ext planbook"),
        code(
            "data",
            """
import pandas as pd

sales = pd.DataFrame({
    "region": ["north", "south", "north", "east", "south", "east"],
    "amount": [120.0, 80.5, 99.9, 45.0, 130.25, 60.0],
})
sales
""",
        ),
        md(
            "script",
            """
## 1. The agent starts, and asks a question

The script: stage a table of sales per region, keep a todo list, ask which chart the person
wants, then stage that chart. `"$new_cell"` stands for the id of the cell the agent just
inserted and `"$step"` for the step id, as a model would read them from the tools' answers.
""",
        ),
        code(
            "configure",
            """
from planbook.agents import Scripted

script = Scripted([
    ("insert_cell", {"source": 'per_region = sales.groupby("region")["amount"].sum()\\nper_region',
                     "after": "data", "reason": "total sales per region"}),
    ("todo_write", {"todos": [{"content": "table of sales per region", "step_ids": ["$step"]},
                              {"content": "a chart, as the person prefers"}]}),
    ("ask_user", {"question": "Which chart do you want?", "options": ["bar", "none"]}),
    ("insert_cell", {"source": 'per_region.plot.bar(title="Sales per region");',
                     "after": "$new_cell", "reason": "the chart the person chose"}),
    ("present_plan", {"summary": "Sales per region as a table and a bar chart."}),
])
%config Planbook.model = script
""",
        ),
        code("start", '%plan "summarise the sales by region"'),
        code(
            "wait-for-question",
            """
import asyncio

from planbook.agent.context import decisions_of

while not decisions_of(pb).pending():  # the run goes on in the background; wait for its question
    await asyncio.sleep(0.05)
print(decisions_of(pb).pending()[0].question)
""",
        ),
        md(
            "restart",
            """
## 2. The kernel restarts

Every step of the run was written into the notebook as it happened. To show what a restarted
kernel finds, this cell keeps the notebook file exactly as it is now (as if the kernel died at
this moment), ends this kernel's run, and opens the kept file in a fresh session: that is what
`%load_ext planbook` does in a new kernel.
""",
        ),
        code(
            "simulate-restart",
            """
restarted = work / "after-restart"
restarted.mkdir()
shutil.copy(work / "agent-memory.ipynb", restarted / "agent-memory.ipynb")
%plan stop
pb = planbook.session(notebook=restarted / "agent-memory.ipynb", kernel=True)
print(pb.document.description)
""",
        ),
        md(
            "after",
            """
## 3. Everything is still there

`%plan` shows the staged step, the todo list, the open question and the latest activity;
`%answer` lists the question the agent asked before the restart and records the answer.
""",
        ),
        code("show", "%plan"),
        code("list-questions", "%answer"),
        code("answer", "%answer d1 bar"),
        md(
            "continue",
            """
## 4. Continue where it stopped

The agent goes on from its question (now answered), not from the start: it stages the chart
and presents the plan.
""",
        ),
        code(
            "continue-run",
            """
%plan continue
run = pb.agent_run
await run
print(run.status, [step.reason for step in pb.current_plan().steps])
""",
        ),
        code(
            "approve",
            "# %approve runs what %plan just showed you, and nothing changed since\n"
            "%plan text\n%approve",
        ),
        code(
            "result",
            """
for cell in pb.cells():
    if cell.id not in ids_before:  # the two cells the agent planned, now in the notebook
        print(cell.source.splitlines()[0])
""",
        ),
        md(
            "sharing",
            """
## Sharing without the conversation

The conversation is bounded (old tool output pruned, the oldest turns dropped behind a note) and
versioned. `planbook strip` removes planbook's metadata for sharing; a notebook without a
conversation simply starts a fresh one.
""",
        ),
    ]


NOTEBOOKS: dict[str, Callable[[], list[Cell]]] = {NAME: agent_memory}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    write_notebooks(NOTEBOOKS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
