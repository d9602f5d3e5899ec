"""A step's cost does not grow with the plan, and what a step costs in durable writes of the
notebook file (issue 10 item 6). Costs are counted, never timed: the Python lines a step
executes (a loop over the plan or the history shows as lines that grow with the step's
number), and the fsync'd saves of a real FileNotebook on a real file."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace as with_fields
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planbook.documents import file as file_backend
from planbook.documents.file import FileNotebook
from planbook.documents.file_stat import Look
from planbook.documents.serializer import JUPYTER, Encoder
from planbook.engine.stored_record import BUCKET
from planbook.model.events import Event
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace
from tests.conftest import make_notebook
from tests.kernel_helper import kernel


def open_session(path: Path) -> Session:
    return Session(
        FileNotebook(path), Workspace(path.parent, protected=(path,)), notebook_path=path
    )


@contextmanager
def lines_per_step(session: Session, steps: set[int]) -> Iterator[dict[int, int]]:
    """Python lines executed by each of ``steps`` of a run (step n: from step n-1's end to its
    own), counted by a trace function in this thread (the executor runs in it); calls made
    outside those steps are not traced (that would take seconds)."""
    counts: dict[int, int] = {}
    step = [1]

    def on_event(event: Event) -> None:
        if event.kind == "step_finished":
            step[0] += 1

    def lines(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line" and step[0] in steps:
            counts[step[0]] = counts.get(step[0], 0) + 1
        return lines

    def calls(frame: FrameType, event: str, arg: Any) -> Any:
        return lines if step[0] in steps else None

    session.subscribe(on_event)
    sys.settrace(calls)
    try:
        yield counts
    finally:
        sys.settrace(None)


def test_step_k_of_a_long_plan_costs_what_step_10_costs(tmp_path: Path) -> None:
    """Steps 10 and 10 + 64 of one 80-step plan sit at the same place of their checkpoint
    bucket (64 to a bucket), so everything they do is the same but the history behind them:
    a loop over the plan's steps, its results or its checkpoints would add hundreds of lines
    (before this change: 11,300 lines at step 10 and 15,300 at step 290 of a 300-step plan)."""
    path = make_notebook(tmp_path / "n.ipynb", [f"v{i} = {i}" for i in range(10)])
    session = open_session(path)
    ids = [c.id for c in session.cells()]
    for k in range(80):
        session.propose.edit_cell(ids[k % 10], f"v = {k}", reason="r")
    early, late = range(10, 15), range(10 + BUCKET, 15 + BUCKET)
    with lines_per_step(session, {*early, *late}) as counts:
        assert session.approve().ok
    early = [counts[n] for n in early]
    late = [counts[n] for n in late]
    # min of five: an occasional pruning of the serializer's cache is not the step's own cost
    assert min(late) - min(early) < 40, (early, late)
    assert len(json.loads(path.read_text())["metadata"]["planbook"]["checkpoints"]) == 2


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("append"), st.integers(1, 3)),
            st.tuples(st.just("cut"), st.integers(1, 3)),
            st.tuples(st.just("replace"), st.integers(0, 60)),
        ),
        min_size=1,
        max_size=12,
    ),
    st.sampled_from([" ", "  "]),
    st.sampled_from([1, 500]),
)
def test_a_list_grown_between_saves_is_written_as_json_would_write_it(
    changes: list[tuple[str, int]], indent: str, width: int
) -> None:
    """The serializer reuses a long list's text when the next list starts with the same
    items: appended to, cut back, changed in the middle or at its head, it writes what
    json.dumps writes (with items of 500 characters the list and everything above it are long
    enough to be kept in pieces, as a plan's checkpoints are)."""
    encoder = Encoder(with_fields(JUPYTER, indent=indent))
    items: list[Any] = [{"n": i, "text": ["a\n", "b" * width]} for i in range(40)]
    serial = 40
    for kind, n in changes:
        if kind == "append":
            items = items + [{"n": serial + j, "text": "c" * width} for j in range(n)]
            serial += n
        elif kind == "cut":
            items = items[: max(1, len(items) - n)]
        else:
            items = list(items)
            items[n % len(items)] = {"n": -n, "replaced": True}
        nb = {"cells": [], "metadata": {"planbook": {"plans": {"p": {"results": items}}}}}
        expected = json.dumps(nb, indent=indent, sort_keys=True, ensure_ascii=False) + "\n"
        assert encoder.encode(nb) == expected


@contextmanager
def counted_saves(then: Callable[[], None] = lambda: None) -> Iterator[list[int]]:
    """Count the notebook's durable saves (write, fsync, rename) through the real function;
    ``then`` is called after each."""
    saves: list[int] = []
    real = file_backend.atomic_write

    def counting(path: Path, data: bytes) -> Look:
        seen = real(path, data)
        saves.append(len(data))
        then()
        return seen

    file_backend.atomic_write = counting  # type: ignore[assignment]
    try:
        yield saves
    finally:
        file_backend.atomic_write = real  # type: ignore[assignment]


def test_a_cell_only_step_is_one_durable_write_of_the_notebook(tmp_path: Path) -> None:
    """An edit, an insert, a move and a delete: each step's checkpoint, change and "done"
    reach the disk in one save, and nothing more: the approval travels with the first step's
    save, the plan leaving "executing" with the last one's. Each step is told to listeners
    once its save is on disk, the last one too (after the run's end)."""
    path = make_notebook(tmp_path / "n.ipynb", ["a = 1", "b = 2", "c = 3"])
    session = open_session(path)
    session.propose.edit_cell("c1", "a = 10", reason="r")
    session.propose.insert_cell("d = 4", reason="r")
    session.propose.move_cell("c3", after="c1", reason="r")
    session.propose.delete_cell("c2", reason="r")
    at_step: list[int] = []
    with counted_saves() as saves:
        session.subscribe(lambda e: at_step.append(len(saves)) if e.kind == "step_finished" else 0)
        assert session.approve().ok
    assert at_step == [1, 2, 3, 4]  # the last step's save carries the run's end
    assert len(saves) == 4


def test_a_file_step_is_two_durable_writes_the_checkpoint_before_the_file(
    tmp_path: Path,
) -> None:
    """A file step saves its checkpoint (the file's old bytes) before it writes the file, so a
    crash between the two leaves a change that can be rolled back; then its "done"."""
    path = make_notebook(tmp_path / "n.ipynb", ["a = 1"])
    (tmp_path / "data.txt").write_text("old\n")
    session = open_session(path)
    session.propose.write_file("data.txt", "new\n", reason="r")
    on_disk: list[str] = []  # the file's text at each save of the notebook
    with counted_saves(lambda: on_disk.append((tmp_path / "data.txt").read_text())) as saves:
        assert session.approve().ok
    # the approval with the checkpoint (file still old), then "done" with the run's end
    assert on_disk == ["old\n", "new\n"]
    assert len(saves) == 2


@pytest.mark.kernel
def test_a_step_that_runs_code_is_two_durable_writes_the_first_before_its_code(
    tmp_path: Path,
) -> None:
    """A step with code is saved "running" (with its checkpoint) before its code runs, so a
    crash never runs it twice, and saved again with its outputs and "done": two saves, the
    least that guarantee allows. The code itself reads the file and finds its step running."""
    make_notebook(tmp_path / "n.ipynb", ["x = 1", "y = 2"])
    reads_its_record = (
        "import json\n"
        "meta = json.load(open('n.ipynb'))['metadata']['planbook']\n"
        "plan = next(iter(meta['plans'].values()))\n"
        "print([s['status'] for s in plan['revisions'][-1]['steps']])"
    )
    with kernel(tmp_path) as k:
        reply = k.run(
            "import planbook\n"
            "from planbook.documents import file as backend\n"
            "saves, real = [], backend.atomic_write\n"
            "backend.atomic_write = lambda p, d: (real(p, d), saves.append(len(d)))[0]\n"
            "s = planbook.session(notebook='n.ipynb', live=False)\n"
            "s.propose.edit_cell('c1', 'x = 10', reason='r')\n"
            f"s.propose.edit_cell('c2', {reads_its_record!r}, reason='r', run=True)\n"
            "s.propose.run_cell('c1', reason='r')\n"
            "at = []\n"
            "del saves[:]  # staging saved the plan: count the run's saves\n"
            "s.subscribe(lambda e: at.append(len(saves)) if e.kind == 'step_finished' else 0)\n"
            "ok = s.approve().ok\n"
            "import json as j\n"
            "print(j.dumps({'ok': ok, 'at': at, 'saves': len(saves)}))"
        )
    assert reply.status == "ok", reply.text
    counted = json.loads(reply.stdout.strip().splitlines()[-1])
    assert counted["ok"], reply.text
    # edit with the approval: 1; edit and run: 2 (-> 3); run: 2, its second one with the
    # run's end, told once that save is on disk (-> 5)
    assert counted["at"] == [1, 3, 5] and counted["saves"] == 5, counted
    outputs = json.loads((tmp_path / "n.ipynb").read_text())["cells"][1]["outputs"]
    assert outputs[0]["text"] == ["['done', 'running', 'approved']\n"], outputs


def test_an_approved_step_reads_the_notebook_file_no_more_than_it_saves_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether someone else changed the file is told by one stat (documents/file_stat.py): the
    whole file is read again only when the last look was racy (a change in the clock tick of
    planbook's own save could hide from stat), at most once per save; on a file system that
    stamps changes fine-grained (Linux 6.13+) never."""
    path = make_notebook(tmp_path / "n.ipynb", [f"v{i} = {i}" for i in range(20)])
    session = open_session(path)
    session.propose.edit_cell("c1", "v = 1", reason="r")
    session.propose.edit_cell("c2", "v = 2", reason="r")
    reads: list[Path] = []
    real = Path.read_bytes

    def counting(self: Path) -> bytes:
        reads.append(self)
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", counting)
    with counted_saves() as saves:
        assert session.approve().ok
    assert len(saves) == 2
    assert len([p for p in reads if p == path]) <= len(saves)
    # and a change by someone else is still seen at once
    monkeypatch.setattr(Path, "read_bytes", real)
    path.write_text(path.read_text().replace('"v = 2"', '"v = 9"'))
    assert session.cells()[1].source == "v = 9"


def lines_of(call: Callable[[], object]) -> int:
    """Python lines ``call`` executes in this thread."""
    count = [0]

    def lines(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            count[0] += 1
        return lines

    sys.settrace(lambda frame, event, arg: lines)
    try:
        call()
    finally:
        sys.settrace(None)
    return count[0]


@pytest.mark.parametrize("by", ["id", "position"])
def test_staging_a_step_costs_the_same_on_2000_cells_as_on_20(tmp_path: Path, by: str) -> None:
    """Staging reads the cells' ids, types and sources (``NotebookDocument.outline``), not a
    copy of every cell: before, each staged step converted and copied all 2,000 cells (about
    33,000 Python calls) and cost 7 times a durable save of the notebook."""
    costs = []
    for cells in (20, 2000):
        path = make_notebook(tmp_path / f"n{cells}.ipynb", [f"v{i} = {i}" for i in range(cells)])
        session = open_session(path)
        ids = [c.id for c in session.cells()]
        for k in range(3):  # the projection is built once, then extended
            session.propose.edit_cell(ids[k], f"v = {k}", reason="r")
        token = ids[7] if by == "id" else "#8"
        stage = session.propose.edit_cell
        costs.append(lines_of(lambda s=stage, t=token: s(t, "v = 7", reason="r")))  # type: ignore[misc]
        assert session.current_plan().steps[-1].operation.cell_id == ids[7]  # type: ignore[union-attr]
    small, large = costs
    assert large - small < 100, costs
