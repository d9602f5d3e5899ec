"""The kernel's session in a real kernel: the magics and the in-cell review act on the notebook
the kernel belongs to; a session on another notebook is the caller's alone; switching is
explicit (``planbook.session(nb, kernel=True)``, ``%plan use NB``) and the page follows at once,
as it does ``planbook.session(fresh=True)``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_notebook
from tests.kernel_helper import kernel
from tests.test_comm import Page

pytestmark = pytest.mark.kernel


class PageAndCells(Page):
    """A page with the extension open, and cells run while it listens: what a cell prints is
    kept, and so is what the page hears meanwhile."""

    def say(self, code: str) -> str:
        """Run ``code``; its stdout and stderr (a UsageError's one line lands there)."""
        msg_id = self.kc.execute(code)
        said: list[str] = []

        def stop(msg: dict[str, Any]) -> bool:
            if msg["parent_header"].get("msg_id") != msg_id:
                return False
            if msg["msg_type"] == "stream":
                said.append(msg["content"]["text"])
            elif msg["msg_type"] == "error":
                said.append(f"{msg['content']['ename']}: {msg['content']['evalue']}")
            return msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle"

        self._read(stop)
        return "".join(said)


def staged_sources(path: Path) -> list[str]:
    """What the steps saved in ``path`` propose (inserted or new sources), in plan order."""
    from planbook.engine.stored_record import from_layout  # the stored layout keeps plans by id

    stored = from_layout(json.loads(path.read_text())["metadata"].get("planbook", {}))
    return [
        s["operation"].get("source", "")
        for plan in stored.get("plans", [])
        for s in plan["revisions"][-1]["steps"]
    ]


def test_a_session_on_another_notebook_never_becomes_the_kernels(tmp_path: Path) -> None:
    own = make_notebook(tmp_path / "sales.ipynb", ["import math", "x = 21"])
    other = make_notebook(tmp_path / "copy.ipynb", ["import math", "x = 21"])
    with kernel(tmp_path, JPY_SESSION_NAME=str(own)) as k:
        page = PageAndCells(k)
        page.run("%load_ext planbook")
        page.open()
        page.plan()
        # the tutorials' pattern: a session on a copy, even a fresh one, and work done there
        page.say(
            "import planbook\n"
            "copy = planbook.session('copy.ipynb', fresh=True)\n"
            "copy.propose.insert_cell('on_the_copy = 1', after='c1')"
        )
        assert page.say("print(planbook.session('copy.ipynb') is copy)") == "True\n"
        staged = page.say("%%propose --after c1\non_my_notebook = 1")
        assert "staged step 1" in staged, staged
        assert staged_sources(own) == ["on_my_notebook = 1"]
        assert staged_sources(other) == ["on_the_copy = 1"]
        shown = page.plan(lambda m: len(m["steps"]) == 1)
        assert shown["steps"][0]["after"] == "on_my_notebook = 1"
        described = page.say("print(planbook.session().document.description)")
        assert "sales.ipynb" in described and "copy.ipynb" not in described

        # switching is explicit, and the page shows the notebook switched to at once
        used = page.say("%plan use copy.ipynb")
        assert "act on file: copy.ipynb" in used, used
        page.plan(lambda m: [s["after"] for s in m["steps"]] == ["on_the_copy = 1"])
        assert page.say("print(planbook.session() is copy)") == "True\n"
        page.say("%%propose --after c1\nsecond_on_the_copy = 2")
        assert staged_sources(other) == ["on_the_copy = 1", "second_on_the_copy = 2"]
        # ...and back to the kernel's own notebook: the session it had, its plan on the page
        back = page.say("%plan use")
        assert "act on file: sales.ipynb" in back, back
        page.plan(lambda m: [s["after"] for s in m["steps"]] == ["on_my_notebook = 1"])
        assert page.say("print(planbook.session() is copy)") == "False\n"

        for line, message in [
            ("%plan use nowhere.ipynb", "`nowhere.ipynb` is not a notebook file here"),
            ("%plan use notes.txt", "`notes.txt` is not a notebook (a path ending in .ipynb)"),
            ("%plan use a.ipynb b.ipynb", "`b.ipynb` is more than `%plan use` takes"),
        ]:
            refused = page.say(line)
            assert "UsageError" in refused and message in refused, refused
            assert "Traceback" not in refused


def test_a_fresh_kernel_session_is_followed_by_the_page_at_once(tmp_path: Path) -> None:
    own = make_notebook(tmp_path / "sales.ipynb", ["import math", "x = 21"])
    with kernel(tmp_path, JPY_SESSION_NAME=str(own)) as k:
        page = PageAndCells(k)
        page.run("%load_ext planbook")
        page.open()
        page.plan()
        page.run("%%propose --after c1\nbefore_fresh = 1")
        page.plan(lambda m: len(m["steps"]) == 1)

        page.run("import planbook; pb = planbook.session(fresh=True)")
        # the new session's plan reaches the page without %reload_ext
        page.plan(lambda m: [s["after"] for s in m["steps"]] == ["before_fresh = 1"])
        page.run("%%propose --after c1\nafter_fresh = 2")
        shown = page.plan(lambda m: len(m["steps"]) == 2)
        assert page.say("print(planbook.session() is pb)") == "True\n"

        # a decision on the cell acts on the new session, as %approve would
        first = shown["steps"][0]
        page.decide(
            action="approve",
            step_id=first["id"],
            revision=shown["plan"]["revision"],
            shown=first["hash"],
        )
        page.plan(lambda m: [s["after"] for s in m["steps"]] == ["after_fresh = 2"])
        statuses = page.say("print([s.status for s in pb.current_plan().steps])")
        assert statuses == "['done', 'pending']\n"
        # the same through the explicit path of the kernel's own notebook
        page.run("pb2 = planbook.session('sales.ipynb', fresh=True)")
        page.plan(lambda m: [s["after"] for s in m["steps"]] == ["after_fresh = 2"])
        assert page.say("print(planbook.session() is pb2)") == "True\n"
