"""The wheel holds a LICENSE and no test files; installed in a fresh venv, it renders a panel.

Run by .ci/run with that venv's python, from a folder outside the checkout, so nothing can come
from the repository by accident.
"""

from __future__ import annotations

import sys
import tempfile
import zipfile
from pathlib import Path

import nbformat

import planbook
from planbook.surfaces.widget.panel import ReviewPanel

names = zipfile.ZipFile(sys.argv[1]).namelist()
assert not [n for n in names if "/tests/" in n or n.startswith("tests/")], "test files in the wheel"
assert any(n.endswith("licenses/LICENSE") for n in names), "no LICENSE in the wheel"
assert any(n.endswith("share/jupyter/labextensions/planbook/package.json") for n in names), (
    "the prebuilt JupyterLab extension is missing from the wheel"
)

with tempfile.TemporaryDirectory(prefix="planbook-smoke-") as tmp:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1")]
    nb.cells[0]["id"] = "first"
    path = Path(tmp) / "smoke.ipynb"
    nbformat.write(nb, path)
    pb = planbook.session(notebook=path, fresh=True)
    pb.propose.edit_cell("first", "x = 2", reason="a smoke test")
    panel = pb.review()
    assert isinstance(panel, ReviewPanel), type(panel)
    assert "site-packages" in planbook.__file__, planbook.__file__  # the wheel, not a checkout
    assert "export default" in panel._esm and len(panel._esm) > 1000, "panel JS missing"
    assert ".planbook-panel" in str(panel._css), "panel CSS missing"  # anywidget read the file
    steps = panel.view.get("steps") or []
    assert len(steps) == 1, panel.view
    where = Path(planbook.__file__).parent
    print(f"panel rendered from {where}: 1 step, {len(panel._esm)} chars of JS")
sys.exit(0)
