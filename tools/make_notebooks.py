"""Write the teaching notebooks in notebooks/ from the cell lists below.

The notebooks are generated so that they can be reviewed as plain Python in a pull request and
so that every cell has a stable, readable id (planbook targets cells by id).

    python tools/make_notebooks.py            # write them, without outputs
    python tools/make_notebooks.py --execute  # and run them with nbclient, keeping the outputs

Every notebook works on a copy of itself in a temp folder: planbook edits the notebook it is
pointed at, and running the tutorials (or the tests) must never rewrite the files in the repo.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
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
    return code("setup", f'''
import shutil
import tempfile
from pathlib import Path

import planbook

# In Jupyter, planbook edits the notebook this kernel belongs to. So that running the tutorial
# never changes the file you opened, it edits a copy of it in a temp folder instead.
work = Path(tempfile.mkdtemp(prefix="planbook-{name.removesuffix(".ipynb")}-"))
shutil.copy("{name}", work / "{name}")
pb = planbook.session(notebook=work / "{name}")
ids_before = [cell.id for cell in pb.cells()]
print(pb.document.description)
''')


def quickstart() -> list[Cell]:
    return [
        md("intro", """
# planbook in five minutes

planbook is plan mode for notebooks: every change to a cell or a file is first **staged** as a
step of a plan, you **review** the diffs, **approve** some or all, and only the approved steps
run, each behind a **checkpoint** you can **roll back**. The plan, the approvals and the
checkpoints are stored in the notebook itself.

No language model is needed here: you play the assistant and propose the changes yourself.
The data are the 344 Palmer penguins (the `palmerpenguins` package ships them, no download).
"""),
        code("load-penguins", """
from palmerpenguins import load_penguins

penguins = load_penguins()
penguins.shape
"""),
        md("point", """
## 1. Point planbook at a notebook

With `%load_ext planbook` in JupyterLab, planbook finds the notebook its kernel belongs to.
Here we hand it a copy of this notebook explicitly.
"""),
        copy_cell("quickstart.ipynb"),
        code("load-ext", "%load_ext planbook"),
        md("stage", """
## 2. Stage changes

`%%propose` stages the body of its cell instead of running it: `--after ID` inserts it as a new
cell, `--replace ID` proposes it as the new source of that cell, `--run` runs it once approved.
`%plan cells` lists the cell ids.
"""),
        code("propose-count", """
%%propose --after load-penguins --run --reason "count penguins per species and island"
penguins.groupby(["species", "island"]).size().unstack(fill_value=0)
"""),
        code("propose-dropna", """
%%propose --replace load-penguins --reason "drop the 11 rows with missing measurements"
from palmerpenguins import load_penguins

penguins = load_penguins().dropna()
penguins.shape
"""),
        md("api", "The same from Python, including a change to a file next to the notebook:"),
        code("propose-api", """
pb.propose.insert_cell("## Counts\\nPenguins per species and island.", after="load-penguins",
                       cell_type="markdown", reason="a heading for the new table")
species = "\\n".join(sorted(penguins.species.unique())) + "\\n"
step = pb.propose.write_file("species.txt", species, reason="the species list, for the README")
print(f"staged {step.operation.kind} of {step.operation.path}: {step.status}")
"""),
        md("nothing-yet", "Nothing has changed yet, in the notebook or on disk:"),
        code("check-nothing", """
assert [cell.id for cell in pb.cells()] == ids_before
assert not (work / "species.txt").exists()
print(len(pb.current_plan().steps), "steps staged, nothing applied")
"""),
        md("review", """
## 3. Review

`%plan` shows every step with its reason, its risk and a diff of what it would change.
"""),
        code("show-plan", "%plan"),
        md("approve", """
## 4. Approve some

`%approve` alone approves everything; `%approve 2` the first two pending steps;
`%approve 1,4` exactly steps 1 and 4. We keep the raw data (step 2) and reject it.
"""),
        code("approve-some", "%approve 1,4"),
        code("reject-one", "%reject 2"),
        code("after-approve", """
table = next(cell for cell in pb.cells() if cell.source.startswith("penguins.groupby"))
print(table.outputs[0]["data"]["text/plain"])  # the output is stored in the notebook
print((work / "species.txt").read_text())
"""),
        md("rollback", """
## 5. Checkpoints and rollback

A checkpoint was written before each step. `%rollback` undoes the last step;
`%rollback N` everything after checkpoint N. A rollback is recorded too, so it can be undone.
Variables in the kernel are **not** rolled back: `penguins` is still what it was.
"""),
        code("checkpoints", "%checkpoints"),
        code("rollback-last", """
%rollback
"""),
        code("after-rollback-last", 'assert not (work / "species.txt").exists()'),
        code("rollback-all", "%rollback 1"),
        code("after-rollback-all", """
assert [cell.id for cell in pb.cells()] == ids_before
print(pb.render_text())
"""),
        md("audit", """
## 6. It is all in the notebook

Plans, approvals (with the SHA-256 of exactly what was approved), results and checkpoints live in
`notebook.metadata["planbook"]`. `planbook log` prints the audit trail from a terminal.
"""),
        code("audit-log", """
import subprocess
import sys

log = subprocess.run([sys.executable, "-m", "planbook.cli", "log", str(work / "quickstart.ipynb")],
                     capture_output=True, text=True, check=True)
print(log.stdout)
"""),
        md("next", """
## Next

- `plan-vs-act.ipynb`: what plan mode protects against.
- `checkpoints.ipynb`: a change that breaks a cell, rolled back after the fact.
- `files-and-shell.ipynb`: an assistant that edits a module and runs its tests.
- `bring-your-model.ipynb`: connect OpenAI, Anthropic or Ollama.
- In a terminal: `planbook demo`, then `planbook show` / `approve` / `log` on any notebook.
"""),
    ]


NOTEBOOKS: dict[str, Callable[[], list[Cell]]] = {
    "quickstart.ipynb": quickstart,
}


def build(cells: list[Cell]) -> NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    for kind, cell_id, source in cells:
        cell = (nbformat.v4.new_markdown_cell(source) if kind == "md"
                else nbformat.v4.new_code_cell(source))
        cell["id"] = cell_id
        nb.cells.append(cell)
    return nb


def execute(nb: NotebookNode, folder: Path) -> None:
    from nbclient import NotebookClient

    NotebookClient(nb, timeout=600, kernel_name="python3", record_timing=False,
                   resources={"metadata": {"path": str(folder)}}).execute()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--execute", action="store_true", help="run them and keep the outputs")
    parser.add_argument("names", nargs="*", help="only these notebooks")
    args = parser.parse_args(argv)
    for name, make in NOTEBOOKS.items():
        if args.names and name not in args.names:
            continue
        path = HERE / name
        nb = build(make())
        nbformat.write(nb, path)  # written first: the notebook copies itself when it runs
        if args.execute:
            execute(nb, HERE)
            nbformat.write(nb, path)
        print(f"wrote {path.relative_to(HERE.parent)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
