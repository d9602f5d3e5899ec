"""What the in-cell review is sent of a shell step's preview: bounded, whatever the preview
holds (a received notebook's stored preview can hold anything), so the page stays quick."""

from __future__ import annotations

from pathlib import Path

from planbook.documents.memory import MemoryNotebook
from planbook.model.cell import Cell
from planbook.model.preview import PreviewChange, ShellPreview
from planbook.sessions.session import Session
from planbook.surfaces.comm.shell_view import MOST_CHANGES, MOST_DIFF_CHARS, MOST_OUTPUT_CHARS
from planbook.surfaces.comm.view import plan_message
from planbook.workspace.files import Workspace


def test_a_huge_preview_reaches_the_page_bounded_and_counted(tmp_path: Path) -> None:
    session = Session(MemoryNotebook([Cell(id="c1", source="x = 1")]), Workspace(tmp_path))
    step = session.propose.shell("python make_many.py", reason="many files")
    changes = [
        PreviewChange(path=f"out/{n}.txt", kind="created", diff="+" + "y" * 100_000 + "\n")
        for n in range(MOST_CHANGES + 150)
    ]
    preview = ShellPreview(
        command="python make_many.py", exit_code=0, output="z" * 1_000_000, changes=changes
    )
    session.current_plan().steps[0].preview = preview  # type: ignore[union-attr]

    (shell,) = [s for s in plan_message(session)["steps"] if s["id"] == step.id]
    shown = shell["preview"]
    assert shown["summary"] == "preview (exit 0): 200 created"
    assert len(shown["changes"]) == MOST_CHANGES and shown["more"] == 150
    assert shown["changes"][0]["path"] == "out/0.txt"
    diff = shown["changes"][0]["diff"]
    assert diff.endswith("more characters]") and len(diff) < MOST_DIFF_CHARS + 50
    assert shown["output"].endswith("\n[... 996,000 more characters]")
    assert len(shown["output"]) < MOST_OUTPUT_CHARS + 50
    assert (shell["cell_id"], shell["anchor"], shell["previewing"]) == (None, {"end": True}, False)
