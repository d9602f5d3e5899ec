"""Live rooms: approved steps visible in a second client, against a plain pycrdt client making
the same change (issue 25 item 5: within 2x, median of 20 rounds, interleaved).

A real JupyterLab server with jupyter-collaboration. planbook's side: a Session on a
LiveNotebook stages N insert-cell steps (set-up, not timed), then ``approve()`` runs them. Each
step runs behind its approval-hash check, drift check and checkpoint, and its cell goes into
the shared document in one update with its part of the plan's record (the approval's record
goes before the first step's and is saved with the steps: tests/live/test_live_saves.py); the
server saves the room at the run's end, and ``approve()`` returns once that save is confirmed.

The floor: a plain pycrdt client (tests/live/yclient.py) making the same N inserts, one update
each (a step is visible on its own, so one update per step is the same job: N cells in one
update would be another), with nothing around them: no check, no record, no save. It is the
least a client can send for the same change; the server's relay to the second client is on
both sides. Its durable figure adds what planbook's run ends with: asking the server to save
and waiting for the answer (which comes after every update sent before it was applied).

Both clocks start at the call that starts the change (``approve()``; the first insert), after
the set-up, with a second client (plain pycrdt) already in the room and waiting, in a process
of its own as a page in a browser is (``live_watcher.py``: in the measured side's process it
waited for the GIL while that side went on working), and stop at:
- visible: the watcher holds every new cell (it watches the cells array's length, converting
  no cell);
- durable: that, and the side has finished (planbook: ``approve()`` returned, the server having
  confirmed its save; plain: the server answered the save).

Rows (``floors.row``): 1 and 100 steps visible, and 100 steps in a notebook of ``BIG`` cells
(a step reads its targets by id, so its cost must not grow with the notebook), each against the
floor with the same cells, goal 2x; durable as a second row for 1 and 100 steps (goal 5x: the
run's end writes the plan's record before its save, and the file saved holds that record).
A last row stages single steps in a room of ``BIG`` cells against a plain client's change the
server saved there, with the same step in a room of one cell beside it (``staging``).
Rounds alternate
the sides (planbook, plain, planbook, plain, ...), ``ROUNDS`` each after one warm-up round;
``PLANBOOK_BENCH_QUICK=1`` runs 5.

Run: ``python benchmarks/bench_live.py`` (or ``python benchmarks/run.py live``)
"""

from __future__ import annotations

import gc
import itertools
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from floors import Row, interleaved, row
from live_watcher import Watcher

from planbook.documents.live.document import open_live
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace
from tests.live.yclient import YClient
from tests.support.jupyter_server import RunningServer, start_jupyter

QUICK = os.environ.get("PLANBOOK_BENCH_QUICK") == "1"
ROUNDS = 5 if QUICK else 20
BIG = 500
_names = itertools.count()

#: (visible, durable) seconds of one round
Times = tuple[float, float]


def timed(run: Callable[[], None], watcher: Watcher, name: str, n: int) -> Times:
    """(visible, durable) seconds of ``run``, which makes notebook ``name`` hold ``n`` cells."""
    watcher.watch(name, n)
    gc.collect()
    start = time.perf_counter()
    run()
    done = time.perf_counter()
    visible = watcher.seen()
    return visible - start, max(done, visible) - start


def first_cells(cells: int) -> list[str]:
    return ["x = 1"] + [f"c{i} = {i}" for i in range(1, cells)]


def through_planbook(server: RunningServer, watcher: Watcher, n: int, cells: int) -> Times:
    name = f"pb-{n}-{next(_names)}.ipynb"
    server.write_notebook(name, first_cells(cells))
    doc = open_live(server.url, server.token, name)
    try:
        session = Session(doc, Workspace(server.root))
        anchor = doc.cells()[0].id
        for i in range(n):
            step = session.propose.insert_cell(f"v{i} = {i}", after=anchor, reason="bench")
            anchor = step.operation.cell_id  # type: ignore[union-attr]

        def run() -> None:
            report = session.approve()
            assert report.ok and not report.notes, report.lines()

        return timed(run, watcher, name, n + cells)
    finally:
        doc.close()


def plain_pycrdt(server: RunningServer, watcher: Watcher, n: int, cells: int) -> Times:
    name = f"raw-{n}-{next(_names)}.ipynb"
    server.write_notebook(name, first_cells(cells))
    writer = YClient(server, name)
    try:

        def run() -> None:
            for i in range(n):
                writer.edit(  # where planbook's step i goes: after the cell before it
                    lambda ynb, i=i: ynb.ycells.insert(
                        i + 1,
                        ynb.create_ycell(
                            {
                                "cell_type": "code",
                                "source": f"v{i} = {i}",
                                "metadata": {},
                                "outputs": [],
                                "execution_count": None,
                            }
                        ),
                    )
                )
            status = writer.save()
            assert status == "success", f"the server did not save: {status or 'no answer'}"

        return timed(run, watcher, name, n + cells)
    finally:
        writer.close()


Side = Callable[[RunningServer, Watcher, int, int], Times]
#: (steps, cells in the notebook) of each case
CASES = ((1, 1), (100, 1), (100, BIG))


def measure(server: RunningServer, rounds: int) -> dict[tuple[int, int], dict[str, list[Times]]]:
    """Every case, both sides, interleaved round by round after one warm-up round."""
    sides: dict[str, Side] = {"planbook": through_planbook, "plain": plain_pycrdt}
    results = {case: {side: [] for side in sides} for case in CASES}
    watcher = Watcher(server.url, server.token)
    try:
        for r in range(rounds + 1):
            for case in CASES:
                for side, run in sides.items():
                    times = run(server, watcher, *case)
                    if r:
                        results[case][side].append(times)
    finally:
        watcher.close()
    return results


#: Steps staged and timed in each sample of ``staging``, after one not timed.
STAGED = 5


def staged_step(server: RunningServer, cells: int) -> float:
    """Seconds a staged step takes (the mean of ``STAGED``) in a room of ``cells`` cells: a
    step is in the room and the file when staging returns (the server saves the room at
    each staged step, docs/live.md "Saved when it matters")."""
    name = f"stage-{cells}-{next(_names)}.ipynb"
    server.write_notebook(name, first_cells(cells))
    doc = open_live(server.url, server.token, name)
    try:
        session = Session(doc, Workspace(server.root))
        ids = [c.id for c in doc.cells()]
        session.propose.edit_cell(ids[0], "x = 0", reason="bench")  # the record's first write
        gc.collect()
        start = time.perf_counter()
        for i in range(1, STAGED + 1):
            session.propose.edit_cell(ids[i % len(ids)], f"v{i} = {i}", reason="bench")
        return (time.perf_counter() - start) / STAGED
    finally:
        doc.close()


def plain_saved_change(server: RunningServer, cells: int) -> float:
    """The floor of a staged step: a plain pycrdt client putting a small entry in the
    notebook's metadata and asking the server to save, waiting for its answer (the mean of
    ``STAGED``, after one not timed), in a room of ``cells`` cells."""
    name = f"stage-raw-{cells}-{next(_names)}.ipynb"
    server.write_notebook(name, first_cells(cells))
    writer = YClient(server, name)
    try:

        def change(i: int) -> None:
            writer.edit(lambda ynb: ynb._ymeta["metadata"].__setitem__("bench", {"step": i}))
            status = writer.save()
            assert status == "success", f"the server did not save: {status or 'no answer'}"

        change(0)
        gc.collect()
        start = time.perf_counter()
        for i in range(1, STAGED + 1):
            change(i)
        return (time.perf_counter() - start) / STAGED
    finally:
        writer.close()


def staging(server: RunningServer, rounds: int) -> Row:
    """A staged step in a room of ``BIG`` cells against its floor there: a plain client's
    change saved by the server (a staged step is in the room and the file when staging
    returns, docs/live.md "Saved when it matters"), rounds interleaved; beside it, the same
    step in a room of one cell, which shows what the server's save adds with the notebook's
    size (issue 25 item 2: within 1.5x of one durable save)."""
    sides: dict[str, Callable[[], float]] = {
        "planbook": lambda: staged_step(server, BIG),
        "plain": lambda: plain_saved_change(server, BIG),
        "one cell": lambda: staged_step(server, 1),
    }
    times = interleaved(sides, rounds)
    return row(
        f"staging one step, {BIG} cells",
        times["planbook"],
        times["plain"],
        "a plain pycrdt client's change, saved by the server",
        1.5,
        baseline=times["one cell"],
        baseline_name="the same step in a room of one cell",
    )


def main() -> list[Row]:
    load = os.getloadavg()[0]
    with (
        tempfile.TemporaryDirectory(prefix="bench-live-") as folder,
        start_jupyter(Path(folder) / "root") as server,
    ):
        results = measure(server, ROUNDS)
        staged = staging(server, 5 if QUICK else 10)
    rows: list[Row] = []
    for (steps, cells), sides in results.items():
        visible = {side: [t[0] for t in times] for side, times in sides.items()}
        durable = {side: [t[1] for t in times] for side, times in sides.items()}
        what = f"{steps} step{'s' if steps > 1 else ''}"
        where = f", {cells} cells" if cells > 1 else ""
        rows.append(
            row(
                f"approve + run {what}{where}, visible in a 2nd client",
                visible["planbook"],
                visible["plain"],
                "a plain pycrdt client making the same inserts",
                2.0,
            )
        )
        if cells == 1:
            rows.append(
                row(
                    f"approve + run {what}, durable (approve() returned)",
                    durable["planbook"],
                    durable["plain"],
                    "the same inserts, then a save the server confirmed",
                    5.0,
                )
            )
    rows.append(staged)
    print(f"min / median / max of {ROUNDS} interleaved rounds (ms), load average {load:.1f}")
    for r in rows:
        print(f"{r['name']}\n  planbook {r['ours_text']}  floor {r['floor_text']}  {r['measured']}")
    return rows


if __name__ == "__main__":
    main()
