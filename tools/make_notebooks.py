# ruff: noqa: E501  (markdown tables in the notebook texts cannot be wrapped)
"""Write the teaching notebooks in notebooks/ from the cell lists below.

The notebooks are generated so that they can be reviewed as plain Python in a pull request and
so that every cell has a stable, readable id (planbook targets cells by id).

    python tools/make_notebooks.py            # write them all
    python tools/make_notebooks.py quickstart.ipynb

They are written without outputs, execution counts or widget state, and stay so (a test holds
it): outputs saved from a headless run would show a temp copy's paths and a panel that cannot
work, a person's first run would not match them, and widget state is only noise. The tests run
every one (tests/test_notebooks.py, and nbval over notebooks/).

A tutorial edits the notebook shown in JupyterLab or Notebook 7 when it teaches that (the
quickstart, plan-vs-act: they start over with `%plan reset`, so they run again and again);
the others, and every tutorial run headless, work on a copy in a temp folder, so running them
(or the tests) never rewrites the files in the repo.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import nbformat
from nbformat import NotebookNode

HERE = Path(__file__).resolve().parent.parent / "notebooks"

Cell = tuple[str, str, str]  # (kind: "md" | "code", id, source)


def md(cell_id: str, text: str) -> Cell:
    return ("md", cell_id, text.strip("\n"))


def code(cell_id: str, text: str) -> Cell:
    return ("code", cell_id, text.strip("\n"))


def copy_cell(name: str) -> Cell:
    """The cell every tutorial starts with: a copy of this notebook to work on."""
    return code(
        "setup",
        f'''
import shutil
import tempfile
from pathlib import Path

import planbook

# In Jupyter, planbook edits the notebook this kernel belongs to. So that running the tutorial
# never changes the file you opened, it edits a copy of it in a temp folder instead:
# kernel=True makes the copy the notebook the magics (%%propose, %approve, %plan) act on.
work = Path(tempfile.mkdtemp(prefix="planbook-{name.removesuffix(".ipynb")}-"))
shutil.copy("{name}", work / "{name}")
pb = planbook.session(notebook=work / "{name}", kernel=True)
ids_before = [cell.id for cell in pb.cells()]
print(pb.document.description)
''',
    )


def live_or_copy_cell(name: str) -> Cell:
    """The quickstart and plan-vs-act edit the open notebook when a page shows it: that is
    what they teach. Elsewhere they switch the kernel's session to a copy."""
    return code(
        "setup",
        f'''
import shutil
import tempfile
from pathlib import Path

import planbook

# Open in JupyterLab or Notebook 7 (live with jupyter-collaboration, or through planbook's
# extension), planbook edits this very notebook: you see each step on its cell and each
# approved cell appear here. Anywhere else (nbclient, nbval, VS Code, a plain file) it works
# on a copy in a temp folder, and kernel=True makes the copy the notebook the magics act on.
pb = planbook.session()
if pb.document.backend not in ("live", "page"):
    copy = Path(tempfile.mkdtemp(prefix="planbook-{name.removesuffix(".ipynb")}-")) / "{name}"
    shutil.copy("{name}", copy)
    pb = planbook.session(notebook=copy, kernel=True)
work = pb.workspace.root  # files the plan writes go next to the notebook it edits
print(pb.document.description)
''',
    )


def start_over_cells(then: str = "") -> list[Cell]:
    """A tutorial that edits the open notebook starts over first, so it runs again and again."""
    return [
        md(
            "start-over-note",
            """
Start from a clean record: `%plan reset` rolls back every step planbook applied here that is
still in effect and forgets planbook's record of this notebook (plans, checkpoints), so you
can run this tutorial again from the top (Restart & Run All) and get the same page.
""",
        ),
        code("start-over", "%plan reset\nids_before = [cell.id for cell in pb.cells()]" + then),
    ]


def quickstart() -> list[Cell]:
    return [
        md(
            "intro",
            """
# planbook in five minutes

planbook is plan mode for notebooks: every change to a cell or a file is first **staged** as a
step of a plan, you **review** the diffs, **approve** some or all, and only the approved steps
run, each behind a **checkpoint** you can **roll back**. The plan, the approvals and the
checkpoints are stored in the notebook itself.

No language model is needed here: you play the assistant and propose the changes yourself.
The data are the 344 Palmer penguins (the `palmerpenguins` package ships them, no download).
""",
        ),
        code(
            "load-penguins",
            """
from palmerpenguins import load_penguins

penguins = load_penguins()
penguins.shape
""",
        ),
        md(
            "point",
            """
## 1. Point planbook at a notebook

In JupyterLab, planbook finds the notebook its kernel belongs to. With jupyter-collaboration it
edits it live: keep this notebook open and watch the cells below this one change as you
approve and roll back. Elsewhere the next cell hands planbook a copy of this notebook.
""",
        ),
        live_or_copy_cell("quickstart.ipynb"),
        code("load-ext", "%load_ext planbook"),
        *start_over_cells(),
        md(
            "stage",
            """
## 2. Stage changes

`%%propose` stages the body of its cell instead of running it: `--after CELL` inserts it as a
new cell, `--replace CELL` proposes it as the new source of that cell, `--run` runs it once
approved. A cell is named by its id, a position (`#2`, as `%plan cells` lists them) or a tag;
in JupyterLab, `%%propose` with no anchor puts the new cell right after its own cell.
""",
        ),
        code(
            "propose-count",
            """
%%propose --after load-penguins --run --reason "count penguins per species and island"
penguins.groupby(["species", "island"]).size().unstack(fill_value=0)
""",
        ),
        code(
            "propose-dropna",
            """
%%propose --replace load-penguins --reason "drop the 11 rows with missing measurements"
from palmerpenguins import load_penguins

penguins = load_penguins().dropna()
penguins.shape
""",
        ),
        md("api", "The same from Python, including a change to a file next to the notebook:"),
        code(
            "propose-api",
            """
pb.propose.insert_cell("## Counts\\nPenguins per species and island.", after="load-penguins",
                       cell_type="markdown", reason="a heading for the new table")
species = "\\n".join(sorted(penguins.species.unique())) + "\\n"
step = pb.propose.write_file("species.txt", species, reason="the species list, for the README")
print(f"staged {step.operation.kind} of {step.operation.path}: {step.status}")
""",
        ),
        md("nothing-yet", "Nothing has changed yet, in the notebook or on disk:"),
        code(
            "check-nothing",
            """
assert [cell.id for cell in pb.cells()] == ids_before
assert not (work / "species.txt").exists()
print(len(pb.current_plan().steps), "steps staged, nothing applied")
""",
        ),
        md(
            "review",
            """
## 3. Review

`%plan` shows every step with its reason, its risk and a diff of what it would change.
""",
        ),
        code("show-plan", "%plan"),
        md(
            "panel",
            """
In JupyterLab, Notebook 7 and VS Code that review is a panel, with a toggle per step,
Approve / Reject / Revise buttons and the checkpoint timeline (elsewhere it is markdown).
`%plan text` prints the same as plain text:
""",
        ),
        code("show-text", "%plan text"),
        md(
            "approve",
            """
## 4. Approve some

`%approve` alone approves everything; `%approve 2` step 2 (the number `%plan` shows);
`%approve 1,3-4` exactly steps 1, 3 and 4; `%approve --first 2` the first two pending steps.
We keep the raw data: step 2 is rejected, so no step is left pending.
""",
        ),
        code("approve-some", "%approve 1,3-4"),
        code("reject-one", "%reject 2"),
        code(
            "after-approve",
            """
table = next(cell for cell in pb.cells() if cell.source.startswith("penguins.groupby"))
print(table.outputs[0]["data"]["text/plain"])  # the output is stored in the notebook
print((work / "species.txt").read_text())
""",
        ),
        md(
            "rollback",
            """
## 5. Checkpoints and rollback

A checkpoint was written before each step. `%rollback` undoes the last step;
`%rollback N` everything after checkpoint N. A rollback is recorded too, so it can be undone.
Variables in the kernel are **not** rolled back: `penguins` is still what it was.
""",
        ),
        code("checkpoints", "%checkpoints"),
        code(
            "rollback-last",
            """
%rollback
""",
        ),
        code("after-rollback-last", 'assert not (work / "species.txt").exists()'),
        code("rollback-all", "%rollback 1"),
        code(
            "after-rollback-all",
            """
assert [cell.id for cell in pb.cells()] == ids_before
print(pb.render_text())
""",
        ),
        md(
            "audit",
            """
## 6. It is all in the notebook

Plans, approvals (with the SHA-256 of exactly what was approved), results and checkpoints live in
`notebook.metadata["planbook"]`. `planbook log` prints the audit trail from a terminal.
""",
        ),
        code(
            "audit-log",
            """
import subprocess
import sys

log = subprocess.run([sys.executable, "-m", "planbook", "log", str(work / "quickstart.ipynb")],
                     capture_output=True, text=True, check=True)
print(log.stdout)
""",
        ),
        md(
            "next",
            """
## Next

- `plan-vs-act.ipynb`: what plan mode protects against.
- `checkpoints.ipynb`: a change that breaks a cell, rolled back after the fact.
- `files-and-shell.ipynb`: an assistant that edits a module and runs its tests.
- `bring-your-model.ipynb`: connect OpenAI, Anthropic or Ollama.
- In a terminal: `planbook demo`, then `planbook show` / `approve` / `log` on any notebook.
""",
        ),
    ]


LOAD = code(
    "load-penguins",
    """
from palmerpenguins import load_penguins

penguins = load_penguins()
penguins.shape
""",
)


NOTES_FILE = "Biscoe 2009: three nests flooded\\n"


def plan_vs_act() -> list[Cell]:
    return [
        md(
            "intro",
            """
# Plan mode against act mode

The same scripted assistant gets the same task twice, on **this notebook**: once in **plan**
mode, once in **act** mode. Its script holds two mistakes real models make: it deletes the
markdown cell with your notes ("clutter"), and it deletes a file with `rm` ("stray files").
Plan mode lets you catch both before anything happens: the steps wait as badges on their cells
and in the panel. Act mode applies each change at once, behind a checkpoint: a cell always comes back, and what a
shell command destroyed comes back only where planbook can run commands in an overlay (Linux with
user namespaces; `%plan` says when it cannot).

Open in JupyterLab or Notebook 7 with planbook's extension, keep the cells below in view. Run it
as often as you like: the start-over cell puts the notebook and the file back each time.
""",
        ),
        LOAD,
        md(
            "my-notes",
            """
**My notes.** Chinstrap penguins were only sampled on Dream island: check that before comparing
islands. (This is the cell the assistant will call clutter.)
""",
        ),
        live_or_copy_cell("plan-vs-act.ipynb"),
        code("load-ext", "%load_ext planbook"),
        md(
            "start-over-note",
            """
## Start (or start over)

`%plan reset` rolls back every step planbook applied here that is still in effect and forgets
planbook's record of this notebook; then the file of field notes is written next to it. Run
this cell again whenever you want to rehearse.
""",
        ),
        code(
            "start-over",
            f"""
%plan reset
NOTES = "{NOTES_FILE}"
(work / "field-notes.txt").write_text(NOTES)
""",
        ),
        code(
            "script",
            """
from planbook.agents import Scripted

CLEANED = \"\"\"from palmerpenguins import load_penguins

penguins = load_penguins().dropna()
penguins.shape\"\"\"

script = Scripted([
    ("list_cells", {}),
    ("edit_cell", {"cell_id": "load-penguins", "source": CLEANED, "run": True,
                   "reason": "drop the rows with missing values"}),
    ("delete_cell", {"cell_id": "my-notes", "reason": "remove clutter"}),
    ("shell", {"command": "rm -f field-notes.txt", "reason": "clean up stray files"}),
    ("present_plan", {"summary": "Drop missing rows, then tidy the notebook and the folder."}),
])
TASK = "tidy the penguins analysis"


def outcome():
    \"\"\"What is left of your notes, your file and the steps.\"\"\"
    ids = [cell.id for cell in pb.cells()]
    return {
        "your notes cell": "kept" if "my-notes" in ids else "deleted",
        "field-notes.txt": "kept" if (work / "field-notes.txt").exists() else "deleted",
        "steps": ", ".join(step.status for step in pb.current_plan().steps),
    }
""",
        ),
        md(
            "plan-mode",
            """
## Plan mode: everything is staged

Read tools (list the cells, read files, read-only shell) run at once; every change becomes a
step. Look up: the edit waits on `load-penguins`, the deletion on your notes.
""",
        ),
        code(
            "run-plan",
            """
pb.set_mode("plan")
run = await pb.plan(TASK, model=script)
print("\\n".join(f"{a.type:>8}  {a.message}" for a in run.activity))
assert "my-notes" in [cell.id for cell in pb.cells()]
assert (work / "field-notes.txt").exists()
""",
        ),
        md("plan-review", "The review panel lists the three steps with their diffs:"),
        code("plan-panel", "%plan"),
        md(
            "plan-decide",
            """
You approve the cleaning, and reject the two mistakes:
""",
        ),
        code(
            "plan-approve",
            """
print(pb.approve(1))
pb.reject("2-3")
print(penguins.shape)  # the approved edit ran in this kernel
in_plan_mode = outcome()
""",
        ),
        md(
            "act-mode",
            """
## Act mode: everything applies at once

The same script, from the same start: `pb.reset()` (what `%plan reset` does) undoes the
approved edit, and the notes file is written again. Each change is applied as soon as the
assistant makes it, behind a checkpoint: watch your notes cell go.
""",
        ),
        code(
            "run-act",
            """
pb.reset()
(work / "field-notes.txt").write_text(NOTES)
pb.set_mode("act")
run = await pb.plan(TASK, model=script)
print("\\n".join(f"{a.type:>8}  {a.message}" for a in run.activity))
print("notes cell still there:", "my-notes" in [cell.id for cell in pb.cells()])
print("field-notes.txt still there:", (work / "field-notes.txt").exists())
""",
        ),
        md(
            "act-rollback",
            """
Roll everything back to the first checkpoint: the notebook comes back; the file comes back where
the shell step ran in an overlay (its layer was checkpointed), and stays gone where it could not.
""",
        ),
        code(
            "act-undo",
            """
record = pb.rollback("1")
print(f"undid {len(record.undid)} steps")
print("notes cell back:", "my-notes" in [cell.id for cell in pb.cells()])
print("field-notes.txt back:", (work / "field-notes.txt").exists())
in_act_mode = outcome()
""",
        ),
        md("side-by-side", "## Side by side"),
        code(
            "compare",
            """
import pandas as pd

pd.DataFrame({"plan mode": in_plan_mode, "act mode, then rollback": in_act_mode})
""",
        ),
        md(
            "lesson",
            """
## What each mode protects against

| mode | what the assistant can do without you | what protects you |
| --- | --- | --- |
| `plan` | read cells, files, variables; read-only shell | nothing changes until you approve; you see every diff first |
| `ask` | the same | each change waits for your yes or no |
| `auto-edit` | edit cells and files | checkpoints; running code and shell still asks |
| `act` | everything | checkpoints only: cells and files can be rolled back, and shell effects inside the folder where overlays work; kernel memory cannot |

Switch with `%mode plan|ask|auto-edit|act` (or `%plan on` / `%plan off`). Permission rules
refine this per tool and path: see `files-and-shell.ipynb`.

## On your own notebook

`Scripted([...])` plays any list of tool calls through the same tools and the same policy as a
model: give it the ids of your own cells (`%plan cells` lists them), then
`await pb.plan("task", model=script)` or `%config Planbook.model = script` and `%plan "task"`.
`%plan reset` starts over for the next rehearsal. See docs/magics-and-api.md.
""",
        ),
    ]


def checkpoints() -> list[Cell]:
    return [
        md(
            "intro",
            """
# Checkpoints: undoing a change found after the fact

A change that looked harmless breaks a later cell. We find out afterwards, look at what the
checkpoints hold, and roll back. Then the one thing a checkpoint cannot bring back: the
kernel's memory.
""",
        ),
        LOAD,
        code("summary", 'penguins.groupby("species")["body_mass_g"].mean().round(1)'),
        copy_cell("checkpoints.ipynb"),
        code("load-ext", "%load_ext planbook"),
        md("harmless", "## 1. A change that looks harmless"),
        code(
            "propose-columns",
            """
%%propose --replace load-penguins --run --reason "keep only the columns we plot"
from palmerpenguins import load_penguins

penguins = load_penguins()[["species", "island", "bill_length_mm", "flipper_length_mm"]]
penguins.shape
""",
        ),
        code("approve-columns", "%approve"),
        md(
            "found",
            """
## 2. Found after the fact

Later the summary is refreshed, through planbook as well. It fails: the column it needs is gone.
(The step ran in this kernel; its traceback is stored in the summary cell of the copy, and the
report below says which step failed and why.)
""",
        ),
        code(
            "refresh",
            """
pb.propose.run_cell("summary", reason="refresh the summary")
report = pb.approve()
print(report)
assert not report.ok
""",
        ),
        md(
            "holds",
            """
## 3. What a checkpoint holds

One checkpoint per executed step. For every cell the step touched: its id, its position, and
only the parts the step changed, as they were before: the old source for an edit, the old
outputs and execution count for a run, the whole cell for a delete, nothing more for a move.
For a file: its bytes and permission bits, or that it did not exist. Every output item and
every file's bytes is a content-addressed blob, compressed and stored once however many
checkpoints refer to it; an old source is kept in the checkpoint itself (compressed when long).
""",
        ),
        code("list-checkpoints", "%checkpoints"),
        code(
            "inspect-checkpoint",
            """
import json

from planbook.engine.checkpoints import source_before

first = pb.checkpoints()[0]
snapshot = first.cells[0]
print(first.label, "| cell", snapshot.cell_id, "at position", snapshot.index)
print(source_before(pb.store.blobs, snapshot))
size = len(json.dumps(pb.store.state.model_dump(mode="json")))
print(f"planbook metadata: {size} bytes, {len(pb.store.state.blobs)} blobs")
""",
        ),
        md(
            "roll",
            """
## 4. Roll back

`%rollback 1` undoes everything after checkpoint 1, newest first: the refresh (the summary's
outputs come back) and the edit (the old source comes back).
""",
        ),
        code("rollback", "%rollback 1"),
        code(
            "after-rollback",
            """
restored = next(cell for cell in pb.cells() if cell.id == "load-penguins")
assert "penguins = load_penguins()\\n" in restored.source
print(restored.source)
""",
        ),
        md(
            "memory",
            """
## 5. What it cannot roll back: kernel memory

The notebook is back, but `penguins` in this kernel is still the narrowed frame: a checkpoint
stores cells and files, not variables. Re-run the restored cells (through planbook, so it is
recorded too).
""",
        ),
        code(
            "memory-still-broken",
            """
print("body_mass_g in memory:", "body_mass_g" in penguins.columns)
assert "body_mass_g" not in penguins.columns
""",
        ),
        code(
            "rerun",
            """
pb.propose.run_cell("load-penguins", reason="reload the full table after the rollback")
pb.propose.run_cell("summary", reason="refresh the summary")
print(pb.approve())
assert "body_mass_g" in penguins.columns
""",
        ),
        md(
            "also",
            """
Also not undone by a rollback: a shell command's effects outside the folder, or all of them where
overlays cannot run (a checkpoint before such a step says so in its label), and anything a cell
did outside the notebook (a database write, an upload). Files
written by file steps are restored byte for byte.
""",
        ),
    ]


MODULE = '''"""Small statistics over the Palmer penguins table."""

import pandas as pd


def bill_ratio(frame: pd.DataFrame) -> pd.Series:
    """Bill length over bill depth, per penguin."""
    return frame["bill_length_mm"] / frame["bill_length_mm"]


def heaviest_species(frame: pd.DataFrame) -> str:
    return str(frame.groupby("species")["body_mass_g"].mean().idxmax())
'''

TESTS = """from palmerpenguins import load_penguins

from penguin_stats import bill_ratio, heaviest_species

penguins = load_penguins()


def test_bill_ratio_of_the_first_penguin():
    assert round(bill_ratio(penguins).iloc[0], 2) == 2.09


def test_heaviest_species():
    assert heaviest_species(penguins) == "Gentoo"
"""

RULES = """[tool.planbook.permissions]
shell = { "* -m pytest *" = "allow", "rm *" = "deny" }
write_file = { "*.md" = "allow" }
"""


def files_and_shell() -> list[Cell]:
    return [
        md(
            "intro",
            """
# Files and shell: an assistant that fixes a module and runs its tests

Next to this notebook (in a temp copy) live `penguin_stats.py`, a small module with a bug,
and `test_penguin_stats.py`. A scripted assistant reads them, proposes a fix and a test run;
shell commands go through a classifier; permission rules in `pyproject.toml` refine what may run
without asking.
""",
        ),
        LOAD,
        code(
            "setup",
            f"""
import shutil
import sys
import tempfile
from pathlib import Path

import planbook

# planbook edits the notebook it is pointed at: work on a copy of this one, in a temp folder,
# with the module, its tests and the project's permission rules next to it.
work = Path(tempfile.mkdtemp(prefix="planbook-files-and-shell-"))
shutil.copy("files-and-shell.ipynb", work / "files-and-shell.ipynb")
MODULE = '''{MODULE}'''
TESTS = '''{TESTS}'''
RULES = '''{RULES}'''
(work / "penguin_stats.py").write_text(MODULE)
(work / "test_penguin_stats.py").write_text(TESTS)
(work / "pyproject.toml").write_text(RULES)
# The kernel's own Python, so the test run uses the packages this notebook has.
TEST = f"{{sys.executable}} -m pytest -q --color=no -p no:cacheprovider"

# The session reads the permission rules when it starts, so the rules are written first.
pb = planbook.session(notebook=work / "files-and-shell.ipynb", kernel=True)
print(MODULE)
""",
        ),
        code("load-ext", "%load_ext planbook"),
        md(
            "plan",
            """
## 1. Reads run at once, everything else is staged

`read_file` and a read-only shell command (`ls`) run immediately. The edit to the module and the
test run are staged. The classifier decides whether a command is read-only.
""",
        ),
        code(
            "run-agent",
            """
from planbook.agents import Scripted

fix = [{"search": 'frame["bill_length_mm"] / frame["bill_length_mm"]',
        "replace": 'frame["bill_length_mm"] / frame["bill_depth_mm"]'}]
script = Scripted([
    ("read_file", {"path": "penguin_stats.py"}),
    ("run_read_only_shell", {"command": "ls"}),
    ("edit_file", {"path": "penguin_stats.py", "edits": fix,
                   "reason": "the ratio divided the length by itself"}),
    ("shell", {"command": TEST, "reason": "run the tests"}),
    ("shell", {"command": "rm -rf __pycache__", "reason": "remove the bytecode cache"}),
    ("present_plan", {"summary": "Fix bill_ratio, then run the tests."}),
])
run = await pb.plan("make the tests pass", model=script)
print("\\n".join(f"{a.type:>8}  {a.message}" for a in run.activity))
assert "bill_depth_mm" not in (work / "penguin_stats.py").read_text()  # nothing changed yet
assert len(pb.current_plan().steps) == 2  # the `rm` was refused, not staged
""",
        ),
        md(
            "denied",
            """
The `rm` was refused outright: a `deny` rule in `pyproject.toml` (below) forbids it in every
mode, so it never even reaches the plan. Review what did:
""",
        ),
        code("review", "%plan"),
        code("approve", "%approve"),
        code(
            "after",
            """
plan = pb.current_plan()
print(plan.results[-1].message)  # the tail of the test run
assert all(step.status == "done" for step in plan.steps)
""",
        ),
        md(
            "classifier",
            """
## 2. The shell classifier

A command counts as read-only only if it parses into allow-listed read-only programs, with no
redirection, substitution, or chaining into something else. Anything unsure is a write.
""",
        ),
        code(
            "classify",
            """
from planbook.engine.rules.classifier import classify

for command in ["ls -la", "git status", "grep -n def penguin_stats.py | head -3",
                "python -m pytest -q", "echo hi > notes.txt", "find . -name '*.pyc' -delete",
                "cat $(ls)", "rm -rf build"]:
    verdict = classify(command)
    label = "read-only" if verdict.read_only else "write"
    print(f"{label:9}  {command:40}  {verdict.reason}")
""",
        ),
        md(
            "rules",
            """
## 3. Permission rules

`[tool.planbook]` in the project's `pyproject.toml` (or a `planbook.toml`) refines the mode:
`allow`, `ask` or `deny` per tool, with glob patterns on the path or the command; the last rule
that matches wins. In plan mode an `allow` never skips the plan, a `deny` always refuses. In
`auto-edit` mode, allowed commands run without asking.

A rules file you did not write yourself (this one came with the project) does not allow
anything until you trust it: its `allow` rules count as `ask` until then, while `deny` and `ask`
rules always apply. You read the rules below; trust them with `%plan trust` (or
`planbook trust pyproject.toml` at a shell):
""",
        ),
        code("show-rules", 'print((work / "pyproject.toml").read_text())'),
        code("trust-rules", "%plan trust"),
        code(
            "auto-edit",
            """
pb.set_mode("auto-edit")
script = Scripted([
    ("shell", {"command": TEST, "reason": "run the tests again"}),
    ("write_file", {"path": "CHANGELOG.md", "content": "- fix bill_ratio\\n",
                    "reason": "note the fix"}),
])
run = await pb.plan("check and note the fix", model=script)
print("\\n".join(f"{a.type:>8}  {a.message}" for a in run.activity))
print((work / "CHANGELOG.md").read_text())
""",
        ),
        md(
            "end",
            """
Both ran without a question (the test command by the `allow` rule, the changelog by the mode)
and both are steps with checkpoints: `%rollback` removes the changelog again.
""",
        ),
        code(
            "rollback",
            """
%rollback
""",
        ),
        code("after-rollback", 'assert not (work / "CHANGELOG.md").exists()'),
    ]


def bring_your_model() -> list[Cell]:
    return [
        md(
            "intro",
            """
# Bring your model

planbook's assistant runs on pydantic-ai, so any model it supports works: name it with a string.
Keys come from the usual environment variables and are never written into the notebook.

| provider | setting | key |
| --- | --- | --- |
| OpenAI | `%config Planbook.model = "openai:gpt-4.1"` | `OPENAI_API_KEY` |
| Anthropic | `%config Planbook.model = "anthropic:claude-sonnet-4-5"` | `ANTHROPIC_API_KEY`, and `pip install "pydantic-ai-slim[anthropic]"` |
| Ollama, vLLM, any OpenAI-compatible server | `%config Planbook.model = "http://localhost:11434/v1#llama3.1"` | none |

`PLANBOOK_MODEL` in the environment sets the default. Without any model, everything but the
assistant (`%%propose`, `%approve`, the panel, rollback) still works.

This notebook never calls out when no model is configured: it uses the scripted stand-in.
""",
        ),
        LOAD,
        copy_cell("bring-your-model.ipynb"),
        code("load-ext", "%load_ext planbook"),
        md(
            "resolve",
            """
## 1. What each setting gives

Building a model does not call the provider; a missing key is reported in one line.
""",
        ),
        code(
            "resolve-models",
            """
import os

from planbook.agent.config import AgentConfig, NoModelConfigured, resolve_model

for spec in ["openai:gpt-4.1", "anthropic:claude-sonnet-4-5",
             "http://localhost:11434/v1#llama3.1"]:
    try:
        model = resolve_model(AgentConfig(model=spec))
        print(f"{spec:36} -> {type(model).__name__}({model.model_name!r})")
    except NoModelConfigured as exc:
        print(f"{spec:36} -> not usable here: {str(exc)[:90]}...")
""",
        ),
        md(
            "choose",
            """
## 2. Pick the model

A real one if `PLANBOOK_MODEL` is set; otherwise the scripted agent, which makes the same tool
calls a model would, through the same tools and the same policy.
""",
        ),
        code(
            "choose-model",
            """
from planbook.agents import Scripted

scripted = Scripted([
    ("list_cells", {}),
    ("inspect_variable", {"name": "penguins"}),
    ("insert_cell", {"source": 'penguins.groupby("species")["flipper_length_mm"].mean().round(1)',
                     "after": "load-penguins", "run": True,
                     "reason": "mean flipper length per species"}),
    ("present_plan", {"summary": "One new cell: mean flipper length per species."}),
])
model = os.environ.get("PLANBOOK_MODEL") or scripted
print("using", model if isinstance(model, str) else
      "the scripted agent (PLANBOOK_MODEL is not set)")
""",
        ),
        md(
            "run",
            """
## 3. Ask for a plan

`%config Planbook.model = ...` sets the model for this session (here: the one picked above).
Then `%plan "task"` starts the assistant in the background and shows its activity as it works;
from Python, `await pb.plan("task")` runs it and waits for it.
""",
        ),
        code("config", "%config Planbook.model = model"),
        code(
            "plan-task",
            """
run = await pb.plan("add a table of mean flipper length per species")
print(run.status, "-", len(run.activity), "activity lines")
""",
        ),
        code("review", "%plan"),
        code("approve", "%approve"),
        code(
            "result",
            """
new = next(cell for cell in pb.cells() if "flipper_length_mm" in cell.source)
print(new.outputs[0]["data"]["text/plain"] if new.outputs else "(no output)")
""",
        ),
        md(
            "testing",
            """
## Testing without a network

Tests never reach a model: use `planbook.agents.Scripted` (as here), or pydantic-ai's
`FunctionModel` / `TestModel` as `Planbook.model`. Provider errors that survive the client's
retries end the run with one line; the steps staged so far stay in the plan.
""",
        ),
    ]


NOTEBOOKS: dict[str, Callable[[], list[Cell]]] = {
    "quickstart.ipynb": quickstart,
    "plan-vs-act.ipynb": plan_vs_act,
    "checkpoints.ipynb": checkpoints,
    "files-and-shell.ipynb": files_and_shell,
    "bring-your-model.ipynb": bring_your_model,
}


def build(cells: list[Cell]) -> NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.metadata["language_info"] = {"name": "python"}
    for kind, cell_id, source in cells:
        cell = (
            nbformat.v4.new_markdown_cell(source)
            if kind == "md"
            else nbformat.v4.new_code_cell(source)
        )
        cell["id"] = cell_id
        nb.cells.append(cell)
    return nb


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="only these notebooks")
    args = parser.parse_args(argv)
    write_notebooks(NOTEBOOKS, only=args.names)
    return 0


def write_notebooks(
    notebooks: dict[str, Callable[[], list[Cell]]], *, only: Sequence[str] = ()
) -> None:
    """Build each notebook (or those named in ``only``) into notebooks/, without outputs."""
    for name, make in notebooks.items():
        if only and name not in only:
            continue
        path = HERE / name
        nbformat.write(build(make()), path)
        print(f"wrote {path.relative_to(HERE.parent)}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
