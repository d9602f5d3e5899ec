"""engine/store.py on its own: the state in notebook.metadata["planbook"], on a real file.

Saves are byte-clean (what Jupyter's own writer produces), a bad record is refused in one line
and never written over, and a save made by another process is seen by ``sync``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest

from planbook.documents.file import FileNotebook
from planbook.engine.store import Store
from planbook.errors import MetadataError
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace
from tests.support.engine import Bench, write_notebook


def reopened(path: Path) -> Store:
    return Store(FileNotebook(path))


def test_a_saved_history_loads_back_the_same_and_the_file_is_jupyters_own(tmp_path: Path) -> None:
    bench = Bench(tmp_path, ["x = 1", "y = 'é'"])
    bench.edit("c1", "x = 2")
    bench.write("notes.txt", "hello\n")
    text = bench.path.read_text(encoding="utf-8")
    assert text == nbformat.writes(nbformat.reads(text, as_version=4)) + "\n"
    again = reopened(bench.path)
    assert again.state.model_dump() == bench.store.state.model_dump()
    # Saving what did not change writes nothing different: the file stays byte for byte.
    with again.document.transaction():
        again.save()
    assert bench.path.read_text(encoding="utf-8") == text


def test_untouched_cells_and_foreign_metadata_survive_a_save(tmp_path: Path) -> None:
    path = write_notebook(tmp_path / "n.ipynb", ["a = 1", "b = 2"])
    nb = nbformat.read(path, as_version=4)
    nb.metadata["other_tool"] = {"keep": [1, 2]}
    nbformat.write(nb, path)
    store = reopened(path)
    with store.document.transaction():
        store.log("note", "a first entry")
        store.save()
    saved = nbformat.read(path, as_version=4)
    assert saved.metadata["other_tool"] == {"keep": [1, 2]}
    assert [c.source for c in saved.cells] == ["a = 1", "b = 2"]
    assert reopened(path).state.log[-1].detail == "a first entry"


HOSTILE: list[Any] = [
    "not an object",
    [1, 2, 3],
    {"schema_version": 99},
    {"schema_version": 2, "mode": "godmode"},
    {"schema_version": 2, "plans": {"p1": {"id": "p1", "state": "executing!"}}},
    {"schema_version": 2, "checkpoints": {"0000": {"cp-1": {"seq": "first"}}}},
    {"schema_version": 2, "blobs": {"k": 7}},
]


@pytest.mark.parametrize("raw", HOSTILE, ids=range(len(HOSTILE)))
def test_bad_metadata_is_one_line_and_the_notebook_is_not_rewritten(
    tmp_path: Path, raw: Any
) -> None:
    path = write_notebook(tmp_path / "n.ipynb", ["x = 1"])
    nb = nbformat.read(path, as_version=4)
    nb.metadata["planbook"] = raw
    nbformat.write(nb, path)
    before = path.read_bytes()
    with pytest.raises(MetadataError) as info:
        reopened(path)
    message = str(info.value)
    assert "\n" not in message and "untouched" in message, message
    assert path.read_bytes() == before


def test_sync_sees_a_save_made_by_another_process(tmp_path: Path) -> None:
    path = write_notebook(tmp_path / "n.ipynb", ["x = 1"])
    store = reopened(path)
    assert store.state.log == []
    other = (
        "import sys\n"
        "from planbook.documents.file import FileNotebook\n"
        "from planbook.engine.store import Store\n"
        "store = Store(FileNotebook(sys.argv[1]))\n"
        "with store.document.transaction():\n"
        "    store.log('note', 'from the other process')\n"
        "    store.save()\n"
    )
    subprocess.run([sys.executable, "-c", other, str(path)], check=True, timeout=60)
    assert store.state.log == []  # memory as it was, until it syncs
    store.sync()
    assert [(e.event, e.detail) for e in store.state.log] == [("note", "from the other process")]
    # And a save from here keeps the other process's entry (it started from the saved state).
    with store.document.transaction():
        store.sync()
        store.log("note", "from here")
        store.save()
    details = [e["detail"] for e in _log_entries(path)]
    assert details == ["from the other process", "from here"]


def _log_entries(path: Path) -> list[dict[str, Any]]:
    raw = json.loads(path.read_text(encoding="utf-8"))["metadata"]["planbook"]["log"]
    return [entry for bucket in sorted(raw) for _, entry in sorted(raw[bucket].items())]


#: Made by planbook at 7c5b45e (before steps were stored without their defaults): three
#: cells, a plan of four pending steps, the third depending on the second (an inserted cell).
STORED_WHOLE = Path(__file__).parent / "data" / "plan_stored_whole.ipynb"


def _stored_steps(path: Path) -> list[dict[str, Any]]:
    (plan,) = json.loads(path.read_text())["metadata"]["planbook"]["plans"].values()
    steps: list[dict[str, Any]] = plan["revisions"][-1]["steps"]
    return steps


def _open(path: Path) -> Session:
    return Session(
        FileNotebook(path), Workspace(path.parent, protected=(path,)), notebook_path=path
    )


def test_steps_stored_whole_by_an_earlier_planbook_open_keep_their_bytes_and_run(
    tmp_path: Path,
) -> None:
    """A step is stored without the fields at their defaults (``"error": null``, ``"run_by":
    null``...: engine/plan_dumps.py ``stored_step``). A notebook written before opens to the
    same plan, its untouched steps keep their bytes when the plan is saved again, a new step
    is stored short, and approving runs the old steps, each still held to its base."""
    path = tmp_path / "old.ipynb"
    shutil.copy(STORED_WHOLE, path)
    old = _stored_steps(path)
    assert all({"error", "run_by", "depends_on", "checkpoint"} <= s.keys() for s in old)
    session = _open(path)
    steps = session.current_plan().steps  # type: ignore[union-attr]
    assert [s.id for s in steps] == [s["id"] for s in old]
    assert steps[2].depends_on == (steps[1].id,)
    assert session.store.received == []

    session.propose.edit_cell("c2", "y = x + 2", reason="one more")
    now = _stored_steps(path)
    assert now[:4] == old  # the steps staged before, as the earlier planbook wrote them
    assert text_of(path, old[0]) in path.read_text()  # byte for byte, in the file
    assert now[4].keys() == {"base", "id", "operation", "reason", "risk", "status"}

    # the drift check reads an old step's base: a cell changed behind it is a conflict
    nb = nbformat.read(path, as_version=4)
    nb.cells[2].source = "print('changed elsewhere')"
    nbformat.write(nb, path)
    report = session.approve()  # a run stops at its first conflict
    assert [o.status for o in report.outcomes] == ["done", "done", "done", "conflict"]
    cells = [c.source for c in session.cells()]
    assert cells == ["x = 10", "y = x + 1", "z = y * 3", "print('changed elsewhere')"]
    assert session.approve([5]).ok
    assert session.cells()[1].source == "y = x + 2"
    again = _open(path).current_plan()
    statuses = [s.status for s in again.steps]  # type: ignore[union-attr]
    assert statuses == ["done", "done", "done", "conflict", "done"]
    # a step changed since (its status, its checkpoint) is stored short from then on
    assert "run_by" not in _stored_steps(path)[0] and "checkpoint" in _stored_steps(path)[0]


def text_of(path: Path, step: dict[str, Any]) -> str:
    """A stored step's text as the file holds it (Jupyter's layout at a step's depth)."""
    inner = json.dumps(step, indent=1, sort_keys=True, ensure_ascii=False)
    return inner.replace("\n", "\n" + " " * 8)


def test_the_conversation_is_saved_as_it_changes_and_kept_as_it_was_otherwise(
    tmp_path: Path,
) -> None:
    """The agent's messages are dumped again only when they change (the agent replaces the
    list; anyone who appends to it is seen too); a save of anything else leaves the stored
    conversation as it was, field for field and in the fields' order."""
    from planbook.model.conversation import Conversation

    path = write_notebook(tmp_path / "n.ipynb", ["a = 1"])
    nb = json.loads(path.read_text(encoding="utf-8"))  # keys in an order of its own: kept
    path.write_text(json.dumps({"nbformat": 4, **nb}, indent=1) + "\n", encoding="utf-8")
    store = reopened(path)

    def message(n: int) -> dict[str, Any]:
        return {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": f"m{n}"}]}

    def saved_conversation() -> dict[str, Any]:
        stored: dict[str, Any] = nbformat.read(path, as_version=4).metadata["planbook"]
        return stored["conversation"]

    with store.document.transaction():  # the record's first save writes it whole
        store.log("note", "before the agent")
        store.save()
    with store.document.transaction():
        store.state.conversation = Conversation(task="t", messages=[message(0)])
        store.save()
    first = saved_conversation()
    whole = store.state.model_dump(mode="json")["conversation"]
    assert first == whole and list(first) == list(whole)  # the same fields, in order

    with store.document.transaction():  # replaced whole, as the agent does
        store.state.conversation.messages = [message(0), message(1)]
        store.save()
    assert [m["parts"][0]["content"] for m in saved_conversation()["messages"]] == ["m0", "m1"]

    with store.document.transaction():  # appended to in place
        store.state.conversation.messages.append(message(2))
        store.save()
    assert len(saved_conversation()["messages"]) == 3

    with store.document.transaction():  # another field only
        store.state.conversation.task = "u"
        store.save()
    assert saved_conversation()["task"] == "u" and len(saved_conversation()["messages"]) == 3

    text = path.read_text(encoding="utf-8")
    with store.document.transaction():  # nothing of it
        store.log("note", "unrelated")
        store.save()
    assert saved_conversation() == json.loads(text)["metadata"]["planbook"]["conversation"]
    assert reopened(path).state.conversation == store.state.conversation


def test_what_changes_in_place_in_a_saved_record_reaches_the_file_whatever_else_does_not(
    tmp_path: Path,
) -> None:
    """A save looks only at the plans and checkpoints whose parts noted a change since the
    last one (model/tracked.py): each kind of change in place, made alone after a save, is
    in the file after the next one."""
    bench = Bench(tmp_path, ["x = 1", "y = 2"])
    bench.edit("c1", "x = 2")
    bench.edit("c2", "y = 3")
    store = bench.store
    first, last = store.state.plans[0], store.state.plans[-1]
    changes = [
        lambda: setattr(store.state.checkpoints[0], "label", "renamed in place"),
        lambda: setattr(first, "task", "a task given later"),
        lambda: setattr(first.revisions[0], "summary", "a summary given later"),
        lambda: setattr(first.steps[0], "reason", "a reason given later"),
        lambda: last.results.pop(),
        lambda: store.state.plans.reverse(),
        lambda: store.state.checkpoints.pop(),  # (the order is by number: kept so)
    ]
    for change in changes:
        with store.document.transaction():
            change()
            store.save()
        again = reopened(bench.path).state
        assert again.model_dump() == store.state.model_dump()
