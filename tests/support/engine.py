"""The engine's parts wired by hand on a real notebook file, for tests of one engine module.

No Session: a ``Bench`` holds a FileNotebook on a tmp ``.ipynb``, its Store, a Workspace and
an Executor, and runs edits the way an approval does (stage, approve with its hash, run), so a
test of rollback, retention or the store starts from history the engine itself wrote.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

from planbook.documents.file import FileNotebook
from planbook.engine import planning
from planbook.engine.approval import approval_hash
from planbook.engine.checkpoints import CheckpointWriter
from planbook.engine.executor.report import RunReport
from planbook.engine.executor.run import Executor
from planbook.engine.received import signed_approval
from planbook.engine.runner import NoKernelRunner
from planbook.engine.store import Store
from planbook.model.checkpoint import Checkpoint
from planbook.model.operations import AnyOperation, EditCell, WriteFile
from planbook.model.plan import Approval, Plan, Step
from planbook.workspace.files import Workspace


def write_notebook(path: Path, sources: list[str]) -> Path:
    """A notebook of code cells with ids c1, c2, ... (as Jupyter writes it)."""
    nb = nbformat.v4.new_notebook()
    for n, source in enumerate(sources, start=1):
        cell = nbformat.v4.new_code_cell(source)
        cell["id"] = f"c{n}"
        nb.cells.append(cell)
    nbformat.write(nb, path)
    return path


def file_sources(path: Path) -> list[str]:
    """The cells' sources as the file on disk has them."""
    return [c.source for c in nbformat.read(path, as_version=4).cells]


class Bench:
    """A notebook file with the engine around it, as a Session would wire it."""

    def __init__(self, folder: Path, sources: list[str]) -> None:
        self.path = write_notebook(folder / "analysis.ipynb", sources)
        self.document = FileNotebook(self.path)
        self.workspace = Workspace(folder, protected=(self.path,))
        self.store = Store(self.document)
        self.executor = Executor(
            self.store, self.document, self.workspace, NoKernelRunner, lambda event: None
        )

    def writer(self) -> CheckpointWriter:
        return CheckpointWriter(self.document, self.workspace, self.store.blobs)

    def plan(self) -> Plan:
        """The open plan, or a new one."""
        for plan in reversed(self.store.state.plans):
            if plan.is_open:
                return plan
        plan = Plan(task="bench")
        self.store.state.plans.append(plan)
        return plan

    def stage(self, op: AnyOperation) -> Step:
        with self.document.transaction():
            self.store.sync()
            step = planning.stage(
                self.plan(),
                op,
                reason="test",
                cells=self.document.cells(),
                workspace=self.workspace,
            )
            self.store.save()
        return step

    def approve(self, steps: list[Step]) -> RunReport:
        """Approve ``steps`` of the open plan (as the person would) and run them."""
        plan = self.plan()
        # signed as the person here would (an unsigned approval is a received one)
        approval = signed_approval(
            self.store.state,
            plan.id,
            Approval(
                revision=plan.current.number,
                step_ids=tuple(s.id for s in steps),
                sha256=approval_hash(steps),
                by="tester",
            ),
        )
        with self.document.transaction():
            plan.approvals.append(approval)
            for step in steps:
                step.status = "approved"
                step.run_by = self.executor.token
            plan.fire("approve")
            self.store.save()
        return self.executor.run(plan.id, approval)

    def edit(self, cell_id: str, source: str) -> Checkpoint:
        """Run one approved edit of a cell; its checkpoint."""
        return self._run(EditCell(cell_id=cell_id, source=source))

    def write(self, path: str, content: str) -> Checkpoint:
        """Run one approved file write; its checkpoint."""
        return self._run(WriteFile(path=path, content=content))

    def _run(self, op: AnyOperation) -> Checkpoint:
        step = self.stage(op)
        report = self.approve([step])
        assert report.ok, report
        return self.store.state.checkpoints[-1]
