"""Headless runs, for real: `jupyter nbconvert --execute` and `papermill` subprocesses on real
notebook files, and nbclient's Python API. The kernel finds the notebook the tool was given,
`%%propose --after <id>` stages against it, approved changes survive the options docs/headless.md
recommends, and a run that would drop them (`--inplace`) refuses in one line and loses nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.kernel

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

#: A notebook that plans and approves one change, as a person would write it for a batch run.
CELLS = [
    ("load", "x = 20"),
    ("ext", "%load_ext planbook"),
    ("mode", "%plan on"),
    ("stage", "%%propose --after load --run --reason 'double it'\ny = x * 2\nprint('y is', y)"),
    ("here", "%%propose --reason 'right after this cell'\nz = 0"),
    ("run", "%approve"),
]


def make(path: Path, cells: list[tuple[str, str]] = CELLS) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    for cell_id, source in cells:
        cell = nbformat.v4.new_code_cell(source)
        cell["id"] = cell_id
        nb.cells.append(cell)
    nbformat.write(nb, path)
    return path


def tool_env(tmp: Path) -> dict[str, str]:
    """The tools' kernels import this checkout and keep their Jupyter state in ``tmp``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JPY_", "PLANBOOK_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    for var in ("JUPYTER_RUNTIME_DIR", "IPYTHONDIR"):
        env[var] = str(tmp / var.lower())
    return env


def run_tool(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / args[0]), *args[1:]],
        cwd=cwd,
        env=tool_env(cwd),
        capture_output=True,
        text=True,
        timeout=240,
    )


def outputs(path: Path) -> dict[str, str]:
    """Each cell's printed text, by cell id."""
    nb = nbformat.read(path, as_version=4)
    return {
        c.id: "".join(o.get("text", "") for o in c.get("outputs", []))
        for c in nb.cells
        if c.cell_type == "code"
    }


def approved(path: Path) -> list[str]:
    """The ids of the cells, and that the plan's one step is done, as saved in ``path``."""
    nb = nbformat.read(path, as_version=4)
    plans = nb.metadata.get("planbook", {}).get("plans", {})
    steps = [s for p in plans.values() for r in p.get("revisions", []) for s in r.get("steps", [])]
    assert [s.get("status") for s in steps] == ["done", "done"], steps
    return [c.id for c in nb.cells]


def test_nbconvert_finds_its_notebook_and_keeps_the_approved_change(tmp_path: Path) -> None:
    make(tmp_path / "report.ipynb")
    done = run_tool(
        ["jupyter-nbconvert", "--to", "notebook", "--execute", "report.ipynb"], tmp_path
    )
    assert done.returncode == 0, done.stderr[-2000:]
    # the approved cell is in the notebook the run was given, right after `load`
    ids = approved(tmp_path / "report.ipynb")
    # nbclient sends no cell id: the anchorless one lands after the cell whose source ran
    assert ids[0] == "load" and ids[2:6] == ["ext", "mode", "stage", "here"] and ids[7] == "run"
    inserted = nbformat.read(tmp_path / "report.ipynb", as_version=4).cells[1]
    assert inserted.source.startswith("y = x * 2")
    assert "y is 40" in "".join(o.get("text", "") for o in inserted.outputs)
    # nbconvert's own copy has the run's outputs, and says where planbook's changes went
    said = outputs(tmp_path / "report.nbconvert.ipynb")
    # the first magic says what it opened (loading opens nothing)
    assert "file: report.ipynb (the input of `jupyter nbconvert`" in said["mode"]
    assert "report.nbconvert.ipynb, without planbook's changes" in said["mode"]
    assert "step 1 (insert_cell): done" in said["run"]


def test_nbconvert_inplace_refuses_in_one_line_and_loses_nothing(tmp_path: Path) -> None:
    nb = make(tmp_path / "report.ipynb")
    before = nb.read_bytes()
    failed = run_tool(["jupyter-nbconvert", "--execute", "--inplace", "report.ipynb"], tmp_path)
    assert failed.returncode != 0
    refusal = next(line for line in failed.stderr.splitlines() if "UsageError" in line)
    assert "writes its own copy over report.ipynb when this run ends" in refusal
    assert (
        "nothing was saved: give jupyter nbconvert another output (`--output NAME`, not --inplace)"
        in refusal
    )
    assert "Traceback" not in failed.stderr.split("UsageError")[-1]
    assert nb.read_bytes() == before  # nbconvert stopped at the error: nothing written at all


def test_papermill_finds_its_input_and_keeps_the_approved_change(tmp_path: Path) -> None:
    make(tmp_path / "report.ipynb")
    (tmp_path / "out").mkdir()
    done = run_tool(["papermill", "report.ipynb", "out/run.ipynb", "-p", "x", "1"], tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert approved(tmp_path / "report.ipynb")[2:6] == ["ext", "mode", "stage", "here"]
    assert "comm target 'planbook'" not in done.stderr  # no page: no comm opened for one
    said = outputs(tmp_path / "out" / "run.ipynb")
    assert "file: report.ipynb (the input of `papermill`" in said["mode"]


def test_nbclient_api_says_how_to_name_the_notebook_then_finds_it(tmp_path: Path) -> None:
    """nbclient's Python API tells the kernel nothing: one line says how to name it, and
    PLANBOOK_NOTEBOOK does."""
    from nbclient import NotebookClient

    path = tmp_path / "api.ipynb"
    make(
        path,
        [
            ("load", "x = 1"),
            ("ext", "%load_ext planbook"),
            ("mode", "%mode"),
            (
                "name",
                f"import os; os.environ['PLANBOOK_NOTEBOOK'] = {str(tmp_path / 'api.ipynb')!r}",
            ),
            ("again", "import planbook; print(planbook.session(fresh=True).document.description)"),
        ],
    )
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, resources={"metadata": {"path": str(tmp_path)}}, timeout=120)
    client.execute(env=tool_env(tmp_path))
    said = {c.id: "".join(o.get("text", "") for o in c.outputs) for c in nb.cells}
    # the first magic opens the kernel's notebook, and says in one line how to name it
    (line,) = [line for line in said["mode"].splitlines() if "notebook:" in line]
    assert "memory:" in line
    assert "PLANBOOK_NOTEBOOK=x.ipynb" in line
    assert said["again"].strip() == "file: api.ipynb (named by PLANBOOK_NOTEBOOK)"
