"""A page with neither collaboration nor the planbook extension, as its kernel sees it: planbook
edits the saved file, which the page does not reload by itself. Before the first change planbook
says how to keep both (save first, reload after approving), cells not saved yet are named as
such, and loading, turning plan mode on and showing the plan never write the file."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from planbook.sessions.page_advice import NO_SAVED_CELLS, RELOAD_ADVICE
from tests.kernel_helper import Kernel, kernel

pytestmark = pytest.mark.kernel

NOT_SAVED = "is not in the saved file yet: save the notebook (Ctrl+S) and try again"


def notebook(path: Path, cells: list[tuple[str, str]]) -> Path:
    nb = nbformat.v4.new_notebook()
    for cell_id, source in cells:
        cell = nbformat.v4.new_code_cell(source)
        cell["id"] = cell_id
        nb.cells.append(cell)
    nbformat.write(nb, path)
    return path


def test_save_first_reload_after_and_unsaved_cells_named_as_such(tmp_path: Path) -> None:
    nb = notebook(tmp_path / "page.ipynb", [("load", "x = 1")])
    saved = nb.read_bytes()
    with kernel(tmp_path, JPY_SESSION_NAME=str(nb)) as k:
        k.run("%load_ext planbook")
        first_magic = k.run("%plan on")  # it opens the notebook, and says what it found
        assert first_magic.text.count(RELOAD_ADVICE) == 1, first_magic.text
        assert "Reload Notebook from Disk" in RELOAD_ADVICE and "Ctrl+S" in RELOAD_ADVICE
        assert f"warning: {RELOAD_ADVICE}" in plain_plan(k)  # `%plan`, the panel's header
        assert nb.read_bytes() == saved  # loading, plan mode and the plan wrote nothing

        # a cell the page has and the file does not: named as such, in one line, nothing staged
        unsaved = k.run_in_cell("%%propose\ny = 2", "c0ffee-new")
        assert f"this cell ('c0ffee-n') {NOT_SAVED}" in unsaved.text
        named = k.run("%%propose --after draft-cell\ny = 2")
        assert f"UsageError: cell 'draft-cell' {NOT_SAVED}" in named.text
        assert "'None'" not in named.text + unsaved.text and "Traceback" not in named.text
        assert nb.read_bytes() == saved

        # the first staging says it once more, the next ones do not
        first = k.run("%%propose --after load\ny = 2")
        assert "staged step 1" in first.stdout and RELOAD_ADVICE in first.stdout
        second = k.run("%%propose --after load\nz = 3")
        assert "staged step 2" in second.stdout and RELOAD_ADVICE not in second.stdout

        # a new notebook whose cells were never saved: `%plan cells` says why it lists none
        empty = notebook(tmp_path / "Untitled.ipynb", [])
        k.run(f"import planbook; planbook.session({str(empty)!r}, kernel=True)")
        assert k.run("%plan cells").stdout.strip() == NO_SAVED_CELLS
        assert NOT_SAVED in k.run("%%propose --after abc1\nx = 1").text
        assert "positions count the saved cells" in k.run("%%propose --after #2\nx = 1").text

        # a page with the planbook extension opens the comm itself: then it is in sync and
        # the advice goes (a page without the extension closes the comm the kernel opened)
        assert f"warning: {RELOAD_ADVICE}" in plain_plan(k)
        opened = {"comm_id": "page-1", "target_name": "planbook", "data": {"protocol": 1}}
        k.kc.shell_channel.send(k.kc.session.msg("comm_open", opened))
        assert RELOAD_ADVICE not in plain_plan(k)


def plain_plan(k: Kernel) -> str:
    """What `%plan` shows where widgets do not render."""
    return "".join(o["data"].get("text/plain", "") for o in k.run("%plan").outputs)
