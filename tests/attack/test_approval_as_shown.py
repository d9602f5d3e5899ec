"""An approval carries the plan as it was shown (issue 23, section 5).

Between the moment a surface showed the plan and the moment the person approves, another
process rewrites a staged step in the notebook file (a plain JSON edit). Through each surface
(the panel's message handler, the in-cell review's comm, `%approve` in a real kernel, the CLI in
a subprocess) the approval is refused in one line and nothing runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from planbook.errors import ApprovalMismatch
from planbook.surfaces.widget.panel import ReviewPanel
from tests.conftest import make_notebook, reopen, sources
from tests.kernel_helper import kernel
from tests.test_comm import Page

SWAPPED = "import pathlib; pathlib.Path('pwned.txt').write_text('x')"


def swap_step(path: Path, field: str, value: Any, number: int = 1) -> None:
    """What another process does to the file: rewrite step ``number``'s operation."""
    data = json.loads(path.read_text())
    plan = next(iter(data["metadata"]["planbook"]["plans"].values()))
    plan["revisions"][-1]["steps"][number - 1]["operation"][field] = value
    path.write_text(json.dumps(data, indent=1))


def statuses(path: Path) -> list[str]:
    plan = next(iter(json.loads(path.read_text())["metadata"]["planbook"]["plans"].values()))
    return [s["status"] for s in plan["revisions"][-1]["steps"]]


def test_the_session_refuses_a_step_changed_since_shown_and_names_it(tmp_path: Path) -> None:
    path = make_notebook(tmp_path / "nb.ipynb", ["x = 1", "y = 2"])
    session = reopen(path)
    session.propose.write_file("a.txt", "one\n", reason="r")
    session.propose.edit_cell("c2", "y = 3", reason="r")
    shown = session.mark_shown("test")
    whole = session.hash_of(session.current_plan().steps)  # type: ignore[union-attr]
    swap_step(path, "source", SWAPPED, number=2)
    for given in (shown, whole):
        try:
            session.approve(shown=given)
        except ApprovalMismatch as exc:
            assert "\n" not in str(exc) and "nothing was approved or run" in str(exc)
            if isinstance(given, dict):
                assert str(exc).startswith("step 2 changed since it was shown")
        else:
            raise AssertionError("approved a step changed since it was shown")
    assert not (tmp_path / "a.txt").exists()
    assert statuses(path) == ["pending", "pending"]
    # a step staged after the showing is not approved unseen either
    session.propose.write_file("b.txt", "two\n", reason="r")
    fresh = session.mark_shown("test")
    session.propose.write_file("c.txt", "three\n", reason="r")
    try:
        session.approve(shown=fresh)
    except ApprovalMismatch as exc:
        assert "step 4 was not shown here yet" in str(exc)
    else:
        raise AssertionError("approved a step never shown")
    assert session.approve([3], shown=fresh).ok  # what was shown, unchanged, runs
    assert (tmp_path / "b.txt").read_text() == "two\n"


def test_the_panel_refuses_what_it_did_not_render(tmp_path: Path) -> None:
    path = make_notebook(tmp_path / "nb.ipynb", ["x = 1", "y = 2"])
    session = reopen(path)
    session.propose.edit_cell("c2", "y = 3", reason="r")
    panel = ReviewPanel(session)
    rendered = {s["id"]: s["hash"] for s in panel.state["steps"]}
    step_id = panel.state["steps"][0]["id"]
    swap_step(path, "source", SWAPPED)
    for message in (
        {"action": "approve", "step_ids": [step_id], "revision": 1, "shown": rendered},
        {"action": "approve_all", "revision": 1, "shown": rendered},
    ):
        panel.handle(message)
        assert "changed since it was shown" in panel.state["error"]
    assert sources(path)[1] == ("c2", "y = 2")
    assert statuses(path) == ["pending"]


def test_the_in_cell_review_refuses_what_the_page_did_not_show(tmp_path: Path) -> None:
    nb = make_notebook(tmp_path / "sales.ipynb", ["import math", "x = 21", "x * 2"])
    with kernel(nb.parent, JPY_SESSION_NAME=str(nb)) as k:
        page = Page(k)
        page.run("%load_ext planbook")
        page.open()
        page.run('%%propose --replace c3 --reason "bigger"\nx * 3')
        step = page.plan(lambda m: len(m["steps"]) == 1)["steps"][0]
        swap_step(nb, "source", SWAPPED)
        page.decide(action="approve", step_id=step["id"], revision=1, shown=step["hash"])
        assert "changed since it was shown" in page.error()["message"]
    assert sources(nb)[2] == ("c3", "x * 2")
    assert not (tmp_path / "pwned.txt").exists()
    assert statuses(nb) == ["pending"]


def test_percent_approve_refuses_after_the_file_changed_since_percent_plan(
    tmp_path: Path,
) -> None:
    nb = make_notebook(tmp_path / "sales.ipynb", ["import math", "x = 21", "x * 2"])
    with kernel(nb.parent, JPY_SESSION_NAME=str(nb)) as k:
        k.run("%load_ext planbook")
        k.run('%%propose --replace c3 --run --reason "bigger"\nx * 3')
        k.run("%plan text")
        swap_step(nb, "source", SWAPPED)
        refused = k.run("%approve").text
        assert "step 1 changed since it was shown" in refused
        assert len([line for line in refused.splitlines() if "changed since" in line]) == 1
        # nothing was shown in a fresh kernel: it says so and shows the plan instead
        k.restart()
        k.run("%load_ext planbook")
        first = k.run("%approve").text
        assert "not shown in this kernel yet" in first and "pathlib" in first
        assert statuses(nb) == ["pending"]
    assert not (tmp_path / "pwned.txt").exists()
    assert sources(nb)[2] == ("c3", "x * 2")


def test_planbook_approve_refuses_a_step_rewritten_after_it_printed_it(tmp_path: Path) -> None:
    nb = make_notebook(tmp_path / "sales.ipynb", ["x = 21"])
    session = reopen(nb)
    session.propose.write_file("out.txt", "fine\n", reason="export")
    session.close()
    # another process rewrites the step while the CLI starts its kernel: here, the kernel's
    # own start-up file (IPython runs it before `approve` runs in that kernel)
    startup = Path(os.environ["IPYTHONDIR"]) / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "50-swap.py").write_text(
        "import json, pathlib\n"
        f"p = pathlib.Path({str(nb)!r})\n"
        "d = json.loads(p.read_text())\n"
        "plan = next(iter(d['metadata']['planbook']['plans'].values()))\n"
        "plan['revisions'][-1]['steps'][0]['operation']['path'] = 'pwned.txt'\n"
        "p.write_text(json.dumps(d, indent=1))\n"
    )
    try:
        result = subprocess.run(
            [sys.executable, "-m", "planbook", "approve", str(nb), "--no-rerun"],
            capture_output=True,
            text=True,
            timeout=180,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
    finally:
        (startup / "50-swap.py").unlink()
    assert result.returncode != 0
    assert "out.txt" in result.stdout  # what it printed is what was to be approved
    assert "step 1 changed since it was shown" in result.stderr, result.stderr
    assert not (tmp_path / "pwned.txt").exists() and not (tmp_path / "out.txt").exists()
    assert statuses(nb) == ["pending"]
