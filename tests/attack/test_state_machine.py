"""Random sequences of staging, approval, rejection, rollback, outside edits, restarts and
injected faults on one file notebook, with the promise checked after every rule:

- nothing changed but approved steps (a model of the cells and files follows only the steps
  recorded done and the outside edits the machine made itself);
- every step recorded done has its effect; no plan is left executing;
- rollback restores the files' bytes as they were before the checkpoint;
- only planbook errors, each one line; never a raw exception.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import nbformat
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from planbook.documents.file import FileNotebook
from planbook.engine.projection import apply_text_edits
from planbook.errors import PlanbookError
from planbook.model.operations import EditCell, EditFile, InsertCell, WriteFile
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace
from tests.attack.test_faults import FAULTS, LAYERS, layer_fault
from tests.conftest import make_notebook

FILES = ["f1.txt", "f2.txt", "sub/f3.txt"]
TEXT = st.text(alphabet="ab \n", max_size=8)
FAULTY = [name for name in LAYERS if name not in ("code runner", "shell", "event listeners")]


class PlanbookMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="pb-sm-"))
        self.nb = make_notebook(self.root / "nb.ipynb", ["a = 1", "b = 2"])
        (self.root / "f1.txt").write_text("one\n")
        self.files: dict[str, bytes | None] = {
            "f1.txt": b"one\n",
            "f2.txt": None,
            "sub/f3.txt": None,
        }
        self.cells = {"c1": "a = 1", "c2": "b = 2"}
        self.session = self._open()
        self.fault: tuple[str, int, int] | None = None
        self.raw: list[str] = []

    def _open(self) -> Session:
        return Session(
            FileNotebook(self.nb), Workspace(self.root, protected=(self.nb,)), notebook_path=self.nb
        )

    def teardown(self) -> None:
        self.session.close()
        shutil.rmtree(self.root, ignore_errors=True)

    # --- calling planbook ------------------------------------------------------------------
    def _call(self, action: Any) -> Any:
        try:
            return action()
        except PlanbookError as exc:
            assert "\n" not in str(exc), str(exc)
            return None

    def _statuses(self) -> dict[str, str]:
        plan = self.session.current_plan()
        return {s.id: s.status for s in plan.steps} if plan else {}

    def _apply_done(self, before: dict[str, str]) -> None:
        """Follow, in the model, the steps that became done."""
        plan = self.session.current_plan()
        if plan is None:
            return
        for step in plan.steps:
            if step.status != "done" or before.get(step.id) == "done":
                continue
            op = step.operation
            if isinstance(op, EditCell | InsertCell):
                self.cells[op.cell_id] = op.source
            elif isinstance(op, WriteFile):
                self.files[op.path] = op.content.encode()
            elif isinstance(op, EditFile):
                old = self.files[op.path]
                assert old is not None
                self.files[op.path] = apply_text_edits(old.decode(), op.edits, op.path).encode()
            else:  # DeleteFile
                self.files[op.path] = None  # type: ignore[union-attr]

    # --- rules -------------------------------------------------------------------------------
    @rule(cell=st.sampled_from(["c1", "c2", "nope"]), text=TEXT)
    def stage_edit_cell(self, cell: str, text: str) -> None:
        self._call(lambda: self.session.propose.edit_cell(cell, text, reason="r"))

    @rule(text=TEXT)
    def stage_insert_cell(self, text: str) -> None:
        self._call(lambda: self.session.propose.insert_cell(text, after="c1", reason="r"))

    @rule(path=st.sampled_from(FILES), text=TEXT)
    def stage_write_file(self, path: str, text: str) -> None:
        self._call(lambda: self.session.propose.write_file(path, text, reason="r"))

    @rule(path=st.sampled_from(FILES), text=TEXT)
    def stage_edit_file(self, path: str, text: str) -> None:
        edits = [{"search": "one", "replace": text}]
        self._call(lambda: self.session.propose.edit_file(path, edits, reason="r"))

    @rule(path=st.sampled_from(FILES))
    def stage_delete_file(self, path: str) -> None:
        self._call(lambda: self.session.propose.delete_file(path, reason="r"))

    @rule(spec=st.sampled_from([None, "1", "1-1", "2-2"]))
    def approve(self, spec: str | None) -> None:
        before = self._statuses()
        if self.fault is not None:
            layer, k, f = self.fault
            self.fault = None
            cls, name = LAYERS[layer]
            with layer_fault(cls, name, k, FAULTS[f]):
                report = self._call(lambda: self.session.approve(spec))
        else:
            report = self._call(lambda: self.session.approve(spec))
        if report is not None:
            assert all("\n" not in o.message for o in report.outcomes)
        self._apply_done(before)

    @rule()
    def reject(self) -> None:
        self._call(lambda: self.session.reject())

    @rule()
    def rollback(self) -> None:
        record = self._call(lambda: self.session.rollback())
        if record is None:
            return
        undone = [c for c in self.session.checkpoints() if c.id in record.undid]
        blobs = self.session.store.blobs
        oldest: dict[str, Any] = {}
        for cp in sorted(undone, key=lambda c: c.seq, reverse=True):
            for snap in cp.files:
                oldest[snap.path] = snap
        for path, snap in oldest.items():
            now = (self.root / path).read_bytes() if (self.root / path).exists() else None
            assert now == (blobs.get(snap.blob) if snap.exists else None), path
            self.files[path] = now
        for cp in undone:
            for cell in cp.cells:
                self._resync_cell(cell.cell_id)

    def _resync_cell(self, cell_id: str) -> None:
        nb = nbformat.read(self.nb, as_version=4)
        found = {c.id: c.source for c in nb.cells}
        if cell_id in found:
            self.cells[cell_id] = found[cell_id]
        else:
            self.cells.pop(cell_id, None)

    @rule(cell=st.sampled_from(["c1", "c2"]), text=TEXT)
    def outside_edit_cell(self, cell: str, text: str) -> None:
        nb = nbformat.read(self.nb, as_version=4)
        for c in nb.cells:
            if c.id == cell:
                c.source = text
                self.cells[cell] = text
        nbformat.write(nb, self.nb)

    @rule(path=st.sampled_from(FILES), text=TEXT)
    def outside_edit_file(self, path: str, text: str) -> None:
        target = self.root / path
        target.parent.mkdir(exist_ok=True)
        target.write_text(text)
        self.files[path] = text.encode()

    @rule()
    def restart(self) -> None:
        self.session.close()
        self.session = self._open()

    @rule(
        layer=st.sampled_from(FAULTY),
        k=st.integers(min_value=1, max_value=6),
        fault=st.integers(min_value=0, max_value=len(FAULTS) - 1),
    )
    def inject_fault(self, layer: str, k: int, fault: int) -> None:
        self.fault = (layer, k, fault)

    # --- the promise -------------------------------------------------------------------------
    @invariant()
    def nothing_changed_but_approved_steps(self) -> None:
        nb = nbformat.read(self.nb, as_version=4)
        assert {c.id: c.source for c in nb.cells} == self.cells
        for path, data in self.files.items():
            target = self.root / path
            assert (target.read_bytes() if target.exists() else None) == data, path
        plan = self.session.current_plan()
        if plan is not None:
            assert plan.state != "executing"
            assert not {"approved", "running"} & {s.status for s in plan.steps}


PlanbookMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("PLANBOOK_SM_EXAMPLES", "25")),
    stateful_step_count=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_planbook_state_machine = PlanbookMachine.TestCase
