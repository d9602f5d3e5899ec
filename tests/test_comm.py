"""The in-cell review's comm in a real kernel (jupyter_client), speaking as the page does:
comm_open on the target "planbook", the plan sent back, decisions as comm messages. Each bad
decision gets one line back and changes nothing."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_notebook, sources
from tests.kernel_helper import Kernel, kernel

pytestmark = pytest.mark.kernel


class Page:
    """What the extension does over the kernel's channels, and what it hears back."""

    def __init__(self, k: Kernel) -> None:
        self.kc = k.kc
        self.comm_id = uuid.uuid4().hex
        self.backlog: list[Any] = []

    def _send(self, msg_type: str, content: dict[str, Any]) -> None:
        self.kc.shell_channel.send(self.kc.session.msg(msg_type, content))

    def open(self, page: Any = None) -> None:
        """``page``: the browser tab and load of it the page says it is (connection.ts)."""
        data = {"protocol": 1} if page is None else {"protocol": 1, "page": page}
        self._send("comm_open", {"comm_id": self.comm_id, "target_name": "planbook", "data": data})

    def decide(self, **data: Any) -> None:
        self._send("comm_msg", {"comm_id": self.comm_id, "data": data})

    def run(self, code: str) -> None:
        """Run a cell, as the person would, hearing this comm's messages meanwhile (the
        kernel helper's own run would swallow them)."""
        msg_id = self.kc.execute(code)
        self._read(
            lambda msg: (
                msg["msg_type"] == "status"
                and msg["parent_header"].get("msg_id") == msg_id
                and msg["content"]["execution_state"] == "idle"
            )
        )

    def _read(self, stop: Any, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                msg = self.kc.get_iopub_msg(timeout=0.5)
            except Exception:  # queue.Empty: nothing yet
                continue
            content = msg["content"]
            if content.get("comm_id") == self.comm_id:
                if msg["msg_type"] == "comm_close":
                    self.backlog.append("closed")
                elif msg["msg_type"] == "comm_msg":
                    self.backlog.append(content["data"])
            if stop(msg):
                return
        raise AssertionError(f"the kernel did not answer; heard {self.backlog[-3:]}")

    def listen(self, until: Any) -> dict[str, Any]:
        """The first message of this comm (heard before or from now on) that satisfies
        ``until``; the ones before it are dropped."""
        found: list[Any] = []

        def take() -> bool:
            while self.backlog:
                data = self.backlog.pop(0)
                if until(data):
                    found.append(data)
                    return True
            return False

        if not take():
            self._read(lambda _msg: take())
        return dict(found[0]) if isinstance(found[0], dict) else {}

    def plan(self, check: Any = lambda _m: True) -> dict[str, Any]:
        return self.listen(lambda m: isinstance(m, dict) and m.get("type") == "plan" and check(m))

    def error(self) -> dict[str, Any]:
        return self.listen(lambda m: isinstance(m, dict) and m.get("type") == "error")


@pytest.fixture
def nb(tmp_path: Path) -> Path:
    return make_notebook(tmp_path / "sales.ipynb", ["import math", "x = 21", "x * 2"])


def statuses(nb_path: Path) -> list[str]:
    from planbook.engine.stored_record import from_layout  # the stored layout keeps plans by id

    stored = from_layout(json.loads(nb_path.read_text())["metadata"].get("planbook", {}))
    return [s["status"] for plan in stored.get("plans", []) for s in plan["revisions"][-1]["steps"]]


def approvers(nb_path: Path) -> list[str]:
    from planbook.engine.stored_record import from_layout

    stored = from_layout(json.loads(nb_path.read_text())["metadata"].get("planbook", {}))
    return [a["by"] for plan in stored.get("plans", []) for a in plan["approvals"]]


def test_a_page_sees_the_plan_on_its_cells_and_approves_one_step(nb: Path) -> None:
    with kernel(nb.parent, JPY_SESSION_NAME=str(nb)) as k:
        page = Page(k)
        # before %load_ext the kernel has no such target: the comm is closed, nothing shown
        page.open()
        page.listen(lambda m: m == "closed")

        page = Page(k)
        page.run("%load_ext planbook")
        page.run("x = 21")
        page.open()
        empty = page.plan()
        assert empty["plan"] is None and empty["steps"] == []

        page.run('%%propose --replace c3 --run --reason "bigger"\nprint(x * 3)')
        page.run('%%propose --after c1 --reason "a note"\ny = 1')
        shown = page.plan(lambda m: len(m["steps"]) == 2)
        edit, insert = shown["steps"]
        assert (edit["number"], edit["kind"], edit["cell_id"], edit["status"]) == (
            1,
            "edit_cell",
            "c3",
            "pending",
        )
        assert (edit["before"], edit["after"], edit["runs"], edit["reason"]) == (
            "x * 2",
            "print(x * 3)",
            True,
            "bigger",
        )
        lines = [(ln["type"], ln["text"]) for h in edit["diff"]["hunks"] for ln in h["lines"]]
        assert lines == [("del", "x * 2"), ("add", "print(x * 3)")]
        assert insert["kind"] == "insert_cell" and insert["anchor"] == {"after": "c1"}

        page.decide(
            action="approve",
            step_id=edit["id"],
            revision=shown["plan"]["revision"],
            shown=edit["hash"],
        )
        after = page.plan(
            lambda m: (
                [s["id"] for s in m["steps"]] == [insert["id"]]
                and m["plan"]["state"] != "executing"
            )
        )
        assert after["steps"][0]["status"] == "pending"
        # applied and run through the Session, as %approve 1 would: source, output, status
        assert [s for _, s in sources(nb)] == ["import math", "x = 21", "print(x * 3)"]
        saved = json.loads(nb.read_text())["cells"][2]
        assert "".join(saved["outputs"][0]["text"]) == "63\n"
        assert statuses(nb) == ["done", "pending"]
        # the record says where the person approved it (`%plan log`, the CLI's history)
        assert approvers(nb) == ["in-cell review"]

        page.decide(action="reject", step_id=insert["id"], revision=shown["plan"]["revision"])
        page.plan(lambda m: m["steps"] == [])
        assert statuses(nb) == ["done", "rejected"]


def test_bad_decisions_get_one_line_and_change_nothing(nb: Path) -> None:
    with kernel(nb.parent, JPY_SESSION_NAME=str(nb)) as k:
        page = Page(k)
        page.run("%load_ext planbook")
        page.run('%%propose --replace c3 --reason "bigger"\nx * 3')
        page.open()
        step = page.plan(lambda m: len(m["steps"]) == 1)["steps"][0]
        before = nb.read_bytes()

        cases = [
            (
                {"action": "approve", "step_id": "nope", "revision": 1, "shown": "x"},
                "no step 'nope'",
            ),
            (
                {"action": "approve", "step_id": step["id"], "revision": 7, "shown": "x"},
                "revision 7",
            ),
            ({"action": "launch", "step_id": step["id"], "revision": 1}, "cannot read"),
            ({"action": "reject", "step_id": step["id"]}, "cannot read"),
        ]
        for data, expected in cases:
            page.decide(**data)
            error = page.error()
            assert expected in error["message"], error
            assert "\n" not in error["message"] and "nothing" in error["message"]
        assert nb.read_bytes() == before

        # the cell changed on disk after staging: the same drift check as %approve refuses it
        saved = json.loads(nb.read_text())
        saved["cells"][2]["source"] = "x * 2  # edited by hand"
        nb.write_text(json.dumps(saved, indent=1))
        page.decide(action="approve", step_id=step["id"], revision=1, shown=step["hash"])
        error = page.error()
        assert error["step_id"] == step["id"] and "\n" not in error["message"]
        assert [s for _, s in sources(nb)][2] == "x * 2  # edited by hand"
        assert statuses(nb) == ["pending"]


def test_a_failed_step_is_retried_from_its_cell_and_leaves_the_cell_as_history(
    nb: Path,
) -> None:
    with kernel(nb.parent, JPY_SESSION_NAME=str(nb)) as k:
        page = Page(k)
        page.run("%load_ext planbook")
        page.open()
        page.plan()
        page.run("%%propose --replace c3 --run\nprint(ready)")
        (step,) = page.plan(lambda m: len(m["steps"]) == 1)["steps"]
        page.decide(action="approve", step_id=step["id"], revision=1, shown=step["hash"])
        failed = page.plan(lambda m: [s["status"] for s in m["steps"]] == ["failed"])
        assert failed["stale"] == {}
        page.run("ready = 'yes'")
        # a retry from a revision the person never saw: one line, nothing changed
        page.decide(action="retry", step_id=step["id"], revision=2)
        assert (
            "revision 2"
            in page.listen(lambda m: isinstance(m, dict) and "revision 2" in str(m.get("message")))[
                "message"
            ]
        )
        page.decide(action="retry", step_id=step["id"], revision=1)
        done = page.plan(lambda m: m["steps"] == [] and len(m["decided"]) == 2)
        assert [(d["number"], d["status"]) for d in done["decided"]] == [
            (1, "retried"),
            (2, "done"),
        ]
        assert statuses(nb) == ["failed", "done"]
        saved = json.loads(nb.read_text())["cells"][2]
        assert "".join(saved["outputs"][0]["text"]) == "yes\n"

        # an approved edit without a run: its cell's output is from the code before
        page.run("%%propose --replace c3\nprint('later')")
        shown = page.plan(lambda m: len(m["steps"]) == 1)
        (edit,) = shown["steps"]
        revision = shown["plan"]["revision"]
        page.decide(action="approve", step_id=edit["id"], revision=revision, shown=edit["hash"])
        stale = page.plan(lambda m: m["steps"] == [] and m.get("stale"))
        assert stale["stale"] == {"c3": 1}  # step 1 of the next plan


def test_a_run_sends_the_page_one_plan_a_step(nb: Path) -> None:
    """While a run is under way the page hears the plan as the run starts, as each step
    starts (the step before it done) and as the run ends: one plan a step, not three (each
    is the whole plan); the last one shows every step done."""
    with kernel(nb.parent, JPY_SESSION_NAME=str(nb)) as k:
        page = Page(k)
        page.run("%load_ext planbook")
        page.open()
        page.run('%%propose --replace c1 --run --reason "one"\nimport math as m')
        page.run('%%propose --replace c2 --run --reason "two"\nx = 22')
        page.run('%%propose --replace c3 --run --reason "three"\nx * 3')
        page.plan(lambda m: len(m["steps"]) == 3)
        page.run("%plan text")  # %approve approves what this kernel showed
        page.backlog.clear()
        page.run("%approve")
        plans = [m for m in page.backlog if isinstance(m, dict) and m.get("type") == "plan"]
        shown = [[s["status"] for s in m["steps"]] for m in plans]
        # approved, the run under way, then each step's start (the page shows the steps still
        # to settle: a done step leaves it), then the run's end
        assert shown == [
            ["approved"] * 3,
            ["approved"] * 3,
            ["running", "approved", "approved"],
            ["running", "approved"],
            ["running"],
            [],
        ], shown
        assert plans[-1]["plan"]["state"] != "executing" and statuses(nb) == ["done"] * 3


def heard_until_idle(k: Kernel, code: str) -> tuple[str, set[str]]:
    """Run ``code``; its stdout, and the comms the kernel closed meanwhile (any request's)."""
    msg_id = k.kc.execute(code)
    out, closed = "", set()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        msg = k.kc.get_iopub_msg(timeout=60)
        if msg["msg_type"] == "comm_close":
            closed.add(msg["content"]["comm_id"])
        elif msg["msg_type"] == "stream" and msg["parent_header"].get("msg_id") == msg_id:
            out += msg["content"]["text"]
        elif (
            msg["msg_type"] == "status"
            and msg["parent_header"].get("msg_id") == msg_id
            and msg["content"]["execution_state"] == "idle"
        ):
            return out, closed
    raise AssertionError("the kernel did not answer")


def test_a_new_load_of_a_browser_tab_closes_what_its_earlier_loads_left_open(nb: Path) -> None:
    """A reload does not always get its comm's close out; the next load of the same tab says
    which tab it is, and the kernel closes the earlier loads' links (it sent each the whole
    plan after every change). Another tab, a second notebook of the same load, and a page that
    says nothing readable keep theirs."""
    with kernel(nb.parent, JPY_SESSION_NAME=str(nb)) as k:
        k.run("%load_ext planbook")
        pages = {name: Page(k) for name in ("first", "sibling", "other tab", "reloaded")}
        pages["first"].open({"tab": "t1", "load": "l1"})
        pages["sibling"].open({"tab": "t1", "load": "l1"})  # a second notebook panel
        pages["other tab"].open({"tab": "t2", "load": "l1"})
        hostile = [
            "t1",
            {"tab": "t1"},
            {"tab": "t1" * 100, "load": "l9"},
            {"tab": 1, "load": 2},
            {"tab": "", "load": "l9"},
            ["t1", "l9"],
        ]
        for said in hostile:
            Page(k).open(said)
        count = "from planbook.surfaces.comm import channel\nprint(len(channel._LINKS))"
        assert heard_until_idle(k, count)[0].strip() == str(3 + len(hostile))
        pages["reloaded"].open({"tab": "t1", "load": "l2"})
        out, closed = heard_until_idle(k, count)
        assert out.strip() == str(2 + len(hostile))
        assert closed == {pages["first"].comm_id, pages["sibling"].comm_id}
        pages["reloaded"].run('%%propose --after c1 --reason "a note"\ny = 1')
        assert len(pages["reloaded"].plan(lambda m: len(m["steps"]) == 1)["steps"]) == 1
