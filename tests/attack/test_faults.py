"""Fault injection: each layer raises in turn, at each of its calls during a run.

A clean run of a six-step plan (a cell edit, an inserted cell that runs, a file write, edit and
delete, a shell command) counts how often each layer is called; then, for every call, a fresh
notebook runs the same plan with that call raising. After each: one-line messages only, the plan
is not wedged (it takes new steps, approvals and rejections at once), and every step is either
recorded done with its effect, or left without effect (a step whose code already ran may
fail with its change kept behind its checkpoint, which rollback undoes).
"""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import nbformat
import pytest
from IPython.core.interactiveshell import InteractiveShell

from planbook.documents.file import FileNotebook
from planbook.engine.checkpoints import CheckpointWriter
from planbook.engine.runner import IPythonRunner
from planbook.engine.store import Store
from planbook.errors import PlanbookError
from planbook.model.events import EventBus
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace
from tests.conftest import make_notebook

LAYERS: dict[str, tuple[type, str]] = {
    "document commit": (FileNotebook, "_commit"),
    "document write": (FileNotebook, "_write"),
    "document read": (FileNotebook, "find_cell"),
    "store save": (Store, "save"),
    "workspace read": (Workspace, "read_bytes"),
    "workspace write": (Workspace, "write_bytes"),
    "workspace delete": (Workspace, "delete"),
    "checkpoint cells": (CheckpointWriter, "snapshot_cells"),
    "checkpoint files": (CheckpointWriter, "snapshot_files"),
    "checkpoint after-hashes": (CheckpointWriter, "with_after_hashes"),
    "code runner": (IPythonRunner, "run"),
    "shell": (Workspace, "run_shell"),
    "event listeners": (EventBus, "emit"),
}
FAULTS: list[Callable[[], BaseException]] = [
    lambda: OSError(28, "No space left on device"),
    lambda: MemoryError(),
    lambda: RuntimeError("a bug"),
    lambda: TypeError("'NoneType' object is not subscriptable"),
    lambda: KeyError("cells"),
]


class Counter:
    def __init__(self, fail_at: int | None, fault: Callable[[], BaseException]) -> None:
        self.calls = 0
        self.fail_at = fail_at
        self.fault = fault
        self.fired = False


@contextmanager
def layer_fault(
    cls: type, name: str, fail_at: int | None, fault: Callable[[], BaseException]
) -> Iterator[Counter]:
    counter = Counter(fail_at, fault)
    original = getattr(cls, name)

    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        counter.calls += 1
        if counter.calls == counter.fail_at:
            counter.fired = True
            raise counter.fault()
        return original(self, *args, **kwargs)

    setattr(cls, name, wrapper)
    try:
        yield counter
    finally:
        setattr(cls, name, original)


@pytest.fixture(autouse=True)
def _no_ipython_left_behind() -> Iterator[None]:
    """The runner needs a real IPython shell; other suites expect none to exist afterwards."""
    yield
    InteractiveShell.clear_instance()


def _open(folder: Path) -> Session:
    nb = folder / "nb.ipynb"
    return Session(
        FileNotebook(nb),
        Workspace(folder, protected=(nb,)),
        notebook_path=nb,
        runner=lambda: IPythonRunner(InteractiveShell.instance()),
    )


_TEMPLATES: dict[Path, dict[str, str]] = {}


def _world(folder: Path) -> tuple[Session, dict[str, str]]:
    """A staged plan in ``folder``: staged once, then copied (staging is not under test)."""
    template = folder.parent / "template"
    if template not in _TEMPLATES:
        session, ids = _stage(template)
        session.close()
        _TEMPLATES[template] = ids
    shutil.copytree(template, folder)
    return _open(folder), _TEMPLATES[template]


def _stage(folder: Path) -> tuple[Session, dict[str, str]]:
    folder.mkdir()
    make_notebook(folder / "nb.ipynb", ["a = 1", "b = 2"])
    (folder / "g.txt").write_text("old\n")
    (folder / "h.txt").write_text("gone\n")
    session = _open(folder)
    ids = {}
    ids["edit"] = session.propose.edit_cell("c1", "a = 10", reason="edit").id
    ins = session.propose.insert_cell("print('hi')", after="c2", reason="insert", run=True)
    ids["insert"] = ins.id
    ids["insert_cell"] = ins.operation.cell_id  # type: ignore[union-attr]
    ids["write"] = session.propose.write_file("f.txt", "new\n", reason="w").id
    ids["editf"] = session.propose.edit_file(
        "g.txt", [{"search": "old", "replace": "changed"}], reason="e"
    ).id
    ids["delete"] = session.propose.delete_file("h.txt", reason="d").id
    ids["shell"] = session.propose.shell("echo ran >> runs.log", reason="s").id
    return session, ids


def _check(session: Session, ids: dict[str, str], folder: Path) -> None:
    plan = session.current_plan()
    assert plan.state != "executing"
    status = {s.id: s.status for s in plan.steps}
    assert not {"approved", "running"} & set(status.values()), status
    for step in plan.steps:
        assert step.error is None or "\n" not in step.error
    nb = nbformat.read(folder / "nb.ipynb", as_version=4)
    sources = {c.id: c.source for c in nb.cells}
    text = lambda name: (folder / name).read_text() if (folder / name).exists() else None  # noqa: E731
    cp_of = {s.id: s.checkpoint for s in plan.steps}

    assert sources["c1"] == ("a = 10" if status[ids["edit"]] == "done" else "a = 1")
    inserted = ids["insert_cell"] in sources
    if status[ids["insert"]] == "done":
        cell = next(c for c in nb.cells if c.id == ids["insert_cell"])
        assert "hi" in "".join(o.get("text", "") for o in cell.outputs)
    elif inserted:  # its code ran before the fault: kept behind its checkpoint
        assert status[ids["insert"]] == "failed" and cp_of[ids["insert"]]
    assert text("f.txt") == ("new\n" if status[ids["write"]] == "done" else None)
    assert text("g.txt") == ("changed\n" if status[ids["editf"]] == "done" else "old\n")
    assert text("h.txt") == (None if status[ids["delete"]] == "done" else "gone\n")
    runs = text("runs.log")
    if status[ids["shell"]] == "done":
        assert runs == "ran\n"
    else:
        assert runs is None or (runs == "ran\n" and status[ids["shell"]] == "failed")


def _not_wedged(session: Session) -> None:
    session.propose.write_file("after.txt", "after\n", reason="after")
    assert session.approve().ok
    session.propose.write_file("later.txt", "later\n", reason="later")
    assert session.reject()


def _clean_counts(tmp_path: Path) -> dict[str, int]:
    counts = {}
    for n, (layer, (cls, name)) in enumerate(LAYERS.items()):
        session, _ = _world(tmp_path / f"clean{n}")
        with layer_fault(cls, name, None, FAULTS[0]) as counter:
            assert session.approve().ok
        counts[layer] = counter.calls
        session.close()
    return counts


@pytest.mark.timeout(600)
def test_every_layer_failing_at_every_call_leaves_no_wedged_plan(tmp_path: Path) -> None:
    counts = _clean_counts(tmp_path)
    assert all(counts.values()), counts
    faults = itertools.cycle(FAULTS)
    injected, wedged, raw, problems = 0, 0, 0, []
    for layer, (cls, name) in LAYERS.items():
        for k in range(1, counts[layer] + 1):
            folder = tmp_path / f"{layer.replace(' ', '-')}-{k}"
            session, ids = _world(folder)
            fault = next(faults)
            with layer_fault(cls, name, k, fault) as counter:
                try:
                    report = session.approve()
                    assert all("\n" not in o.message for o in report.outcomes)
                    assert report.stopped is None or "\n" not in report.stopped
                except PlanbookError as exc:
                    assert "\n" not in str(exc)
                except Exception as exc:
                    raw += 1
                    problems.append(f"{layer}#{k}: raw {type(exc).__name__}: {exc}")
            injected += counter.fired
            try:
                _check(session, ids, folder)
                _not_wedged(session)
            except Exception as exc:  # counted and shown below
                wedged += 1
                problems.append(f"{layer}#{k} ({type(fault()).__name__}): {exc!r}")
            session.close()
    print(f"fault points injected: {injected}; wedged or inconsistent: {wedged}; raw: {raw}")
    assert injected >= 50
    assert problems == [], "\n".join(p[:300] for p in problems)
