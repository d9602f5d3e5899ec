"""The quickstart teaches live: opened in JupyterLab with jupyter-collaboration, its cells edit
the open notebook through the room (another client in the room sees the cells appear and roll
back), not a temporary copy. Run headless (nbclient, nbval) it still works on a copy: see
tests/test_notebooks.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest

from tests.live.yclient import YClient
from tests.support.jupyter_server import start_jupyter

pytestmark = [pytest.mark.server, pytest.mark.kernel]

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "quickstart.ipynb"


def test_the_quickstart_edits_the_open_notebook_live(tmp_path: Path) -> None:
    with start_jupyter(tmp_path / "root") as server:
        shutil.copy(NOTEBOOK, server.root / "quickstart.ipynb")
        cells = nbformat.read(NOTEBOOK, as_version=4).cells
        original = [c.id for c in cells]
        session = server.create_session("quickstart.ipynb")  # as JupyterLab does on open
        watcher = YClient(server, "quickstart.ipynb")  # the page the person looks at
        try:
            seen: dict[str, list[str]] = {}
            for cell in cells:
                if cell.cell_type != "code":
                    continue
                result = server.execute(session["kernel"]["id"], cell.source, timeout=180)
                assert result["error"] is None, (cell.id, result["error"])
                if cell.id == "setup":
                    assert result["stdout"].startswith("live: "), result["stdout"]
                if cell.id in ("approve-some", "rollback-all"):
                    watcher.wait_for(lambda y: len(y.ids()) != len(seen.get("last", [])), 5)
                    seen[cell.id] = watcher.ids()
                    seen["last"] = seen[cell.id]
            # approving steps 1, 3 and 4 (a table, a heading, a file) put the two new cells
            # into the open notebook...
            approved = seen["approve-some"]
            assert len(approved) == len(original) + 2 and set(original) < set(approved)
            new_cell = approved[approved.index("load-penguins") + 1]
            assert new_cell not in original
            # ...and rolling everything back took them out again, before the person's eyes
            assert seen["rollback-all"] == original
            assert (server.root / "species.txt").exists() is False
        finally:
            watcher.close()
            server.api("DELETE", f"api/sessions/{session['id']}")
