"""The page backend's protocol (documents/page.py), kernel side, without a browser.

``Page`` below answers as js/labextension/src/pagedoc.ts does (snapshot on ``resync``, one
``apply`` at a time, refusing a change whose targets the person edited); the real page is
driven in Chromium by tests/browser/test_page.py. The Session is real, its runs go through a
real IPython shell, and the notebook file on disk is checked to stay as the person saved it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from IPython.core.interactiveshell import InteractiveShell

from planbook.documents.page import PageNotebook
from planbook.engine.runner import IPythonRunner
from planbook.errors import PlanbookError, TransactionFailed, UsageMistake
from planbook.model.cell import Cell
from planbook.sessions.session import Session
from planbook.surfaces.comm.channel import CellReviewLink, open_link
from planbook.workspace.files import Workspace
from tests.conftest import make_notebook


class Page:
    """A page's notebook model, answering the kernel the way pagedoc.ts does."""

    def __init__(self, cells: list[dict[str, Any]], metadata: dict[str, Any] | None = None):
        self.cells = cells
        self.metadata = metadata or {}
        self.applied = 0
        self.outbox: list[dict[str, Any]] = []  # to the kernel
        self.inbox: list[dict[str, Any]] = []  # from the kernel
        self.refusals: list[str] = []

    def send(self, message: dict[str, Any]) -> None:  # the kernel's comm.send
        self.inbox.append(json.loads(json.dumps(message)))

    def snapshot(self) -> dict[str, Any]:
        return {
            "type": "cells",
            "full": True,
            "seen": self.applied,
            "order": [c["id"] for c in self.cells],
            "cells": copy.deepcopy(self.cells),
            "metadata": copy.deepcopy(self.metadata),
        }

    def edit(self, cell_id: str, source: str) -> dict[str, Any]:
        """The person types; the page's next flush says so."""
        cell = next(c for c in self.cells if c["id"] == cell_id)
        cell["source"] = source
        return {
            "type": "cells",
            "full": False,
            "seen": self.applied,
            "order": [c["id"] for c in self.cells],
            "cells": [copy.deepcopy(cell)],
        }

    def process(self) -> None:
        """Handle what the kernel sent, in order."""
        while self.inbox:
            message = self.inbox.pop(0)
            if message["type"] == "resync":
                self.outbox.append(self.snapshot())
            elif message["type"] == "apply":
                self._apply(message)

    def _apply(self, message: dict[str, Any]) -> None:
        if message["base"] != self.applied:
            self.outbox.append(
                {
                    "type": "refused",
                    "seq": message["seq"],
                    "applied": self.applied,
                    "message": "an earlier change was refused",
                    "snapshot": None,
                }
            )
            return
        by_id = {c["id"]: c for c in self.cells}
        for cell_id, expected in message["expect"].items():
            if cell_id not in by_id or by_id[cell_id]["source"] != expected["source"]:
                text = f"cell {cell_id!r} was changed in the page after the kernel read it"
                self.refusals.append(text)
                self.outbox.append(
                    {
                        "type": "refused",
                        "seq": message["seq"],
                        "applied": self.applied,
                        "message": text,
                        "snapshot": self.snapshot(),
                    }
                )
                return
        for op in message["ops"]:
            ids = [c["id"] for c in self.cells]
            if op["op"] == "insert":
                at = 0 if op["after"] is None else ids.index(op["after"]) + 1
                self.cells.insert(at, op["cell"])
            elif op["op"] == "replace":
                self.cells[ids.index(op["id"])] = op["cell"]
            elif op["op"] == "delete":
                del self.cells[ids.index(op["id"])]
            elif op["op"] == "move":
                cell = self.cells.pop(ids.index(op["id"]))
                ids.remove(op["id"])
                self.cells.insert(0 if op["after"] is None else ids.index(op["after"]) + 1, cell)
            elif op["op"] == "meta":
                self.metadata[op["key"]] = op["value"]
            else:
                value = copy.deepcopy(self.metadata.get(op["key"]) or {})
                for change in op["changes"]:
                    node = value
                    for part in change["path"][:-1]:
                        node = node.setdefault(part, {})
                    if change.get("delete"):
                        node.pop(change["path"][-1], None)
                    else:
                        node[change["path"][-1]] = change["value"]
                self.metadata[op["key"]] = value
        self.applied = message["seq"]
        self.outbox.append(
            {"type": "applied", "seq": message["seq"], "order": [c["id"] for c in self.cells]}
        )


def code(cell_id: str, source: str) -> dict[str, Any]:
    return {
        "id": cell_id,
        "cell_type": "code",
        "source": source,
        "metadata": {},
        "outputs": [],
        "execution_count": None,
    }


class Comm:
    """The kernel side of the comm, as ``comm.create_comm`` gives it."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.errors: list[str] = []

    def send(self, data: dict[str, Any]) -> None:
        if data.get("type") == "error":
            self.errors.append(data["message"])
        elif data.get("type") in ("resync", "apply"):
            self.page.send(data)

    def on_msg(self, callback: Any) -> None:
        self.callback = callback

    def on_close(self, callback: Any) -> None:
        pass

    def deliver(self) -> None:
        """The page's messages reach the kernel (as they do once its shell is free)."""
        while self.page.outbox:
            self.callback({"content": {"data": self.page.outbox.pop(0)}})

    def round_trip(self) -> None:
        for _ in range(4):
            self.page.process()
            self.deliver()


@pytest.fixture(autouse=True)
def _no_ipython_left_behind() -> Iterator[None]:
    yield
    InteractiveShell.clear_instance()


@pytest.fixture
def nb_path(tmp_path: Path) -> Path:
    return make_notebook(tmp_path / "page.ipynb", ["import math", "x = 1"])


def open_session(nb_path: Path) -> Session:
    return Session(
        PageNotebook.from_file(nb_path),
        Workspace(nb_path.parent, protected=(nb_path,)),
        notebook_path=nb_path,
        runner=lambda: IPythonRunner(InteractiveShell.instance()),
    )


def connect(session: Session, page: Page) -> tuple[CellReviewLink, Comm]:
    comm = Comm(page)
    link = CellReviewLink(session, comm)
    link.ask_for_cells()
    comm.round_trip()
    return link, comm


def page_with_unsaved_cell() -> Page:
    # the page holds what the file has plus a cell the person has not saved yet
    return Page([code("c1", "import math"), code("c2", "x = 1"), code("new1", "y = 2")])


def test_reads_come_from_the_page_and_the_file_is_never_written(nb_path: Path) -> None:
    saved = nb_path.read_bytes()
    session = open_session(nb_path)
    page = page_with_unsaved_cell()
    _link, _comm = connect(session, page)
    assert [c.id for c in session.cells()] == ["c1", "c2", "new1"]
    # an unsaved cell can be targeted
    session.propose.insert_cell("z = 41 + 1", after="new1", reason="use y", run=True)
    session.propose.edit_cell("c2", "x = 10", reason="bigger x")
    report = session.approve()
    assert report.ok, report
    page.process()
    sources = [c["source"] for c in page.cells]
    assert sources == ["import math", "x = 10", "y = 2", "z = 41 + 1"]
    run = page.cells[3]
    assert run["execution_count"] is not None and run["outputs"] == []
    record = page.metadata["planbook"]
    assert record["plans"] and record["checkpoints"], "the plan and checkpoints are in the page"
    assert nb_path.read_bytes() == saved  # the page saves, never the kernel


def test_run_step_outputs_land_in_the_page(nb_path: Path) -> None:
    session = open_session(nb_path)
    page = page_with_unsaved_cell()
    _link, comm = connect(session, page)
    session.propose.insert_cell("print('hello', 6 * 7)", after="c2", reason="say", run=True)
    assert session.approve().ok
    comm.round_trip()
    cell = next(c for c in page.cells if "hello" in c["source"])
    assert cell["outputs"][0]["text"] == "hello 42\n"
    assert cell["execution_count"] is not None


def test_a_target_the_person_edited_before_approving_is_refused_in_one_line(
    nb_path: Path,
) -> None:
    session = open_session(nb_path)
    page = page_with_unsaved_cell()
    _link, comm = connect(session, page)
    session.propose.edit_cell("new1", "y = 3", reason="three")
    page.outbox.append(page.edit("new1", "y = 'mine'"))
    comm.deliver()
    report = session.approve()
    assert not report.ok
    line = report.outcomes[0].message
    assert "\n" not in line and "new1" in line
    comm.round_trip()
    assert page.cells[2]["source"] == "y = 'mine'"
    assert session.current_plan().steps[0].status == "conflict"  # type: ignore[union-attr]


def test_a_change_the_page_refuses_is_settled_and_nothing_is_lost(nb_path: Path) -> None:
    """The person types into the target while the run is under way (the kernel cannot hear
    it then): the page refuses the change and every later one, the kernel takes the page's
    state and settles the plan; the person's text is kept."""
    session = open_session(nb_path)
    page = page_with_unsaved_cell()
    _link, comm = connect(session, page)
    session.propose.edit_cell("c2", "x = 2", reason="two")
    session.propose.insert_cell("w = 1", after="c1", reason="w")
    page.edit("c2", "x = 'typed during the run'")  # not yet delivered: the shell is busy
    assert session.approve().ok  # the kernel believes it, for now
    comm.round_trip()
    assert len(page.refusals) == 1 and "\n" not in page.refusals[0]
    assert [c["source"] for c in page.cells] == [
        "import math",
        "x = 'typed during the run'",
        "y = 2",
    ]
    assert [c.source for c in session.cells()][1] == "x = 'typed during the run'"
    # what the person does next reaches the mirror as usual (no change of the kernel's since)
    page.cells.append(code("later", "v = 1"))
    page.outbox.append(page.edit("later", "v = 2"))
    comm.deliver()
    assert [c.id for c in session.cells()][-1] == "later"
    # the kernel's record is the page's again (approved, never run: the run that approved
    # them is over, so the next operation settles them as pending), no checkpoint
    assert any("refused" in w and "\n" not in w for w in session.warnings)
    session.propose.edit_cell("new1", "y = 5", reason="five")
    statuses = [s.status for s in session.current_plan().steps]  # type: ignore[union-attr]
    assert statuses == ["pending", "pending", "pending"], statuses
    assert not session.checkpoints()
    assert session.approve([3]).ok
    comm.round_trip()
    assert page.cells[2]["source"] == "y = 5" and len(page.refusals) == 1


def test_before_the_page_connects_cells_are_not_changed_and_the_file_is_not_written(
    nb_path: Path,
) -> None:
    saved = nb_path.read_bytes()
    session = open_session(nb_path)
    session.propose.edit_cell("c2", "x = 2", reason="two")  # staging: planbook's record only
    report = session.approve()
    assert not report.ok
    assert "no JupyterLab page" in (report.stopped or report.outcomes[0].message)
    assert nb_path.read_bytes() == saved
    # the held record reaches the page when it connects
    page = page_with_unsaved_cell()
    connect(session, page)
    assert page.metadata["planbook"]["plans"]


def test_malformed_page_messages_get_one_line_and_change_nothing(nb_path: Path) -> None:
    session = open_session(nb_path)
    page = page_with_unsaved_cell()
    link, comm = connect(session, page)
    before = session.cells()
    bad: list[Any] = [
        {"type": "cells", "full": True, "seen": 0, "order": ["a"], "cells": []},
        {"type": "cells", "full": "yes", "seen": 0, "order": [], "cells": []},
        {"type": "applied", "seq": 0, "order": []},
        {"type": "refused", "seq": 1, "applied": -1, "message": "x"},
        {"type": "cells", "full": False, "seen": 0, "order": ["c1"], "cells": [{"id": ""}]},
    ]
    for message in bad:
        link.page_message(message)
    assert len(comm.errors) == len(bad)
    assert all("\n" not in e and "nothing was changed" in e for e in comm.errors)
    assert session.cells() == before


def test_parse_refuses_unknown_types() -> None:
    from planbook.documents.page import parse_page_message

    with pytest.raises(UsageMistake, match="cannot read"):
        parse_page_message({"type": "nonsense"})
    with pytest.raises(PlanbookError):
        parse_page_message(["not", "a", "dict"])


def test_a_lost_page_refuses_the_transaction(nb_path: Path) -> None:
    document = PageNotebook.from_file(nb_path)
    page = page_with_unsaved_cell()

    def broken(_message: dict[str, Any]) -> None:
        raise OSError("comm closed")

    document.receive(page.snapshot(), owner="p", send=page.send)
    document.attach(broken, owner="p")
    with pytest.raises(TransactionFailed, match="could not be reached"):
        document.insert_cell(0, Cell(id="zz", source="a"))
    assert [c.id for c in document.cells()] == ["c1", "c2", "new1"]


def test_the_page_backend_needs_the_extension_where_the_server_looks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from planbook.documents.locate import labextension_enabled, page_document

    data, config = tmp_path / "data", tmp_path / "config"
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(data))
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(config))
    monkeypatch.delenv("JUPYTER_PATH", raising=False)
    # only these folders: the venv's own share/jupyter holds the extension after `pip install`
    monkeypatch.setattr("jupyter_core.paths.jupyter_path", lambda *sub: [str(data.joinpath(*sub))])
    assert not labextension_enabled()
    (data / "labextensions" / "planbook").mkdir(parents=True)
    (data / "labextensions" / "planbook" / "package.json").write_text("{}")
    assert labextension_enabled()
    (config / "labconfig").mkdir(parents=True)
    disabled = {"disabledExtensions": {"planbook": True}}
    (config / "labconfig" / "page_config.json").write_text(json.dumps(disabled))
    assert not labextension_enabled()
    # no server, or not in a kernel: never the page
    assert page_document(None, tmp_path / "x.ipynb", "given") is None


# -- property: whatever the interleaving, the page and the mirror agree and no typing is lost --

ACTIONS = st.lists(
    st.one_of(
        st.tuples(st.just("type"), st.integers(0, 2), st.sampled_from(["a", "b", "c"])),
        st.tuples(st.just("change"), st.integers(0, 2), st.sampled_from(["K1", "K2"])),
        st.tuples(st.just("insert"), st.integers(0, 3), st.just("")),
        st.tuples(st.just("to_page"), st.just(0), st.just("")),
        st.tuples(st.just("to_kernel"), st.just(0), st.just("")),
        # the kernel asks for a snapshot (its mirror looked off): the page's answer may be
        # written before it applied a change the kernel has sent since
        st.tuples(st.just("resync"), st.just(0), st.just("")),
    ),
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(ACTIONS)
def test_any_interleaving_converges_and_keeps_what_the_person_typed(actions: list[Any]) -> None:
    """The person types, the kernel changes cells, messages travel late and in any mix: once
    everything is delivered the mirror is the page, and the person's last text of a cell is
    only ever replaced by a kernel change made after the kernel had heard of it."""
    page = Page([code("c1", "1"), code("c2", "2"), code("c3", "3")])
    document = PageNotebook()
    comm = Comm(page)
    link = CellReviewLink.__new__(CellReviewLink)  # the comm half only: no Session needed
    comm.callback = lambda msg: document.receive(msg["content"]["data"], link, page.send)
    document.receive(page.snapshot(), link, page.send)
    typed: dict[str, str] = {}  # cell id -> the person's last text, not yet heard by the kernel
    inserted = 0
    for kind, n, text in actions:
        if kind == "type":
            cell = page.cells[n % len(page.cells)]
            page.outbox.append(page.edit(cell["id"], cell["source"] + text))
            typed[cell["id"]] = cell["source"]
        elif kind == "change":
            cells = document.cells()
            target = cells[n % len(cells)]
            document.replace_cell(target.model_copy(update={"source": text}))
        elif kind == "insert":
            inserted += 1
            document.insert_cell(n, Cell(id=f"k{inserted}", source=f"new {inserted}"))
        elif kind == "to_page":
            page.process()
        elif kind == "resync":
            page.send({"type": "resync"})
        else:
            heard = [m for m in page.outbox if m["type"] == "cells"]
            comm.deliver()
            for message in heard:
                for cell in message["cells"]:
                    if typed.get(cell["id"]) == cell["source"]:
                        typed.pop(cell["id"])
        for cell_id, text in typed.items():
            now = next((c["source"] for c in page.cells if c["id"] == cell_id), None)
            assert now == text, f"the person's text of {cell_id} was overwritten"
    comm.round_trip()
    assert [(c.id, c.source) for c in document.cells()] == [
        (c["id"], c["source"]) for c in page.cells
    ]


def test_a_page_reloaded_without_saving_is_the_notebook_again(nb_path: Path) -> None:
    """The person reloads the page and drops what was not saved (approved changes included):
    the kernel believes the reloaded page, cells and planbook's record alike."""
    session = open_session(nb_path)
    page = page_with_unsaved_cell()
    connect(session, page)
    session.propose.edit_cell("c2", "x = 2", reason="two")
    assert session.approve().ok
    page.process()
    assert page.cells[1]["source"] == "x = 2"
    # the reloaded page holds the file as it was saved: no new cell, no plan
    fresh = Page([code("c1", "import math"), code("c2", "x = 1")])
    connect(session, fresh)
    assert [(c.id, c.source) for c in session.cells()] == [("c1", "import math"), ("c2", "x = 1")]
    assert session.current_plan() is None
    # and the next change goes to the new page, built on what it holds
    session.propose.edit_cell("c2", "x = 3", reason="three")
    assert session.approve().ok
    fresh.process()
    assert fresh.cells[1]["source"] == "x = 3" and fresh.refusals == []


def test_a_change_between_a_reload_and_the_new_pages_cells_is_refused_not_lost(
    nb_path: Path,
) -> None:
    """A reloaded page leaves its old comm open (a page going away does not close it) and
    opens a new one; its cells reach the kernel a round trip later. A change made in between
    goes to no page: it is refused in one line, never sent to the page that is gone and said
    done, then undone by the new page's cells."""
    session = open_session(nb_path)
    gone = page_with_unsaved_cell()
    first = Comm(gone)
    open_link(session, first)
    first.round_trip()
    fresh = Page([code("c1", "import math"), code("c2", "x = 1")])
    comm = Comm(fresh)
    open_link(session, comm)  # the new page's comm is open; its snapshot is still on its way
    session.propose.edit_cell("c2", "x = 2", reason="two")
    report = session.approve()
    assert not report.ok
    assert "no JupyterLab page" in (report.stopped or report.outcomes[0].message)
    assert not any(m["type"] == "apply" and m["ops"] for m in gone.inbox), gone.inbox
    plan = session.current_plan()
    assert plan is not None and [s.status for s in plan.steps] == ["failed"]
    # the new page's cells arrive: the next change lands there
    comm.round_trip()
    session.propose.edit_cell("c2", "x = 3", reason="three")
    assert session.approve().ok
    comm.round_trip()
    assert fresh.cells[1]["source"] == "x = 3" and fresh.refusals == []
