"""Every teaching notebook runs top to bottom in a real kernel, offline, without touching the repo.

The same notebooks also pass ``pytest --nbval-lax notebooks/``; this module runs them with
nbclient so they are part of the default test run and so the checks below can be made.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
NAMES = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))

sys.path.insert(0, str(ROOT / "tools"))
import make_agent_notebook  # noqa: E402
import make_notebooks  # noqa: E402

#: Every notebook's generator: the tutorials', and the agent's own (tools/make_agent_notebook.py).
GENERATORS = {**make_notebooks.NOTEBOOKS, **make_agent_notebook.NOTEBOOKS}


def digest(folder: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.iterdir())
        if p.is_file()
    }


def test_every_issue_notebook_is_there() -> None:
    assert sorted(GENERATORS) == NAMES
    assert {
        "quickstart.ipynb",
        "plan-vs-act.ipynb",
        "checkpoints.ipynb",
        "files-and-shell.ipynb",
        "bring-your-model.ipynb",
        "agent-memory.ipynb",
    } <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_notebook_matches_its_generator(name: str) -> None:
    """The .ipynb is what tools/make_notebooks.py writes (outputs aside): review the script."""
    on_disk = nbformat.read(NOTEBOOKS / name, as_version=4)
    made = make_notebooks.build(GENERATORS[name]())
    assert [(c.id, c.cell_type, c.source, c.metadata.get("tags")) for c in on_disk.cells] == [
        (c.id, c.cell_type, c.source, c.metadata.get("tags")) for c in made.cells
    ]
    assert "planbook" not in on_disk.metadata  # shipped without a plan or history


@pytest.mark.kernel
@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs_offline_and_leaves_the_repo_alone(
    name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from nbclient import NotebookClient

    # Never call out: no model and no key reach the kernel, whatever this shell has set.
    for var in ("PLANBOOK_MODEL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "JPY_SESSION_NAME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the tutorials' copies go where pytest cleans
    before = digest(NOTEBOOKS)
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    ).execute()
    errors = [
        (c.id, o.ename)
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if o.output_type == "error"
    ]
    # a failing step's traceback lands in its target cell (in the copy), never in the tutorial
    assert errors == []
    assert digest(NOTEBOOKS) == before  # the tutorials work on copies


@pytest.mark.parametrize("name", NAMES)
def test_notebook_ships_without_outputs_or_widget_state(name: str) -> None:
    """The rule: a shipped notebook has no outputs and no execution counts (outputs saved from a
    headless run show a temp copy and a panel that cannot work) and no saved widget state;
    tools/make_notebooks.py writes them so."""
    raw = json.loads((NOTEBOOKS / name).read_text(encoding="utf-8"))
    assert set(raw["metadata"]) == {"kernelspec", "language_info"}
    code = [c for c in raw["cells"] if c["cell_type"] == "code"]
    assert [c["id"] for c in code if c["outputs"] or c["execution_count"]] == []


def executed_twice_in_one_kernel(name: str) -> list[list[tuple[str, str, list[str]]]]:
    """Run every cell of ``name`` twice in one kernel (Run All, then Run All again), offline:
    each run's cells as (id, source, the kinds of its outputs)."""
    from nbclient import NotebookClient

    runs = []
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    # A stream the kernel flushed in two messages (its flush timer fell between the text of a
    # print and its newline, as under load) is one block on the page: compare what is shown.
    client = NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        coalesce_streams=True,
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    with client.setup_kernel():
        for _ in range(2):
            for index, cell in enumerate(nb.cells):
                client.execute_cell(cell, index)
            runs.append(
                [
                    (c.id, c.source, [o.get("name", o.output_type) for o in c.get("outputs", [])])
                    for c in nb.cells
                ]
            )
    return runs


@pytest.mark.kernel
@pytest.mark.parametrize("name", ["quickstart.ipynb", "plan-vs-act.ipynb"])
def test_a_tutorial_runs_twice_in_one_kernel_to_the_same_page(
    name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for var in ("PLANBOOK_MODEL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "JPY_SESSION_NAME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    before = digest(NOTEBOOKS)
    first, second = executed_twice_in_one_kernel(name)
    assert first == second
    assert not any("error" in kinds for _, _, kinds in first)
    assert digest(NOTEBOOKS) == before
