"""Live backend: time from approval to the change visible in a second client, and durable.

A real JupyterLab server with jupyter-collaboration; a planbook Session on a LiveNotebook stages
N insert-cell steps, then ``approve()`` runs them. Each approved step runs behind its
approval-hash check, drift check and checkpoint, and the plan's record goes into the shared
document with each step (by part); the server saves the room once the approval is recorded
(before the first step) and at the end of the run, and ``approve()`` returns once that save is
confirmed (durability, issue 15).

The plain way: a pycrdt client making the same N inserts directly, one update each, then doing
what planbook's run ends with: asking the server to save and waiting for its answer (which
comes after every update sent before it was applied).

Two times per side, from the first change to:
- visible: a second client (plain pycrdt) has every new cell (a thread watches for it);
- durable: that, and the side has finished (planbook: ``approve()`` returned; plain: the
  server confirmed the save).
The goals: visible within 50 ms for 1 step and within 1 s for 100; durable at most 5x the
plain way's durable time (the same work on both sides). The plain way's visible time (no
waiting at all) is printed too. Rounds alternate planbook and plain (interleaved), ``ROUNDS``
each, for N = 1 and N = 100; printed as min/median/max, with the goal rows
``benchmarks/run.py`` tabulates.

A step's cost must not grow with the notebook (it reads its targets by id): for N = 100 both
sides run again, interleaved with the others, in a notebook of BIG cells; its durable ratio has
the same goal (the server's save of the bigger file is on both sides).

Run: ``python benchmarks/bench_live.py`` (or ``python benchmarks/run.py live``)
"""

from __future__ import annotations

import itertools
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planbook.documents.live.document import open_live
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace
from tests.live.yclient import YClient
from tests.support.jupyter_server import RunningServer, start_jupyter

ROUNDS = 5
SIZES = (1, 100)
BIG = 500
_names = itertools.count()


class Seen:
    """When ``watcher`` first holds ``n`` cells (watched by a thread from before the start,
    so the time does not include waiting for the side to finish)."""

    def __init__(self, watcher: YClient, n: int) -> None:
        self.at: float | None = None
        self._thread = threading.Thread(target=self._watch, args=(watcher, n), daemon=True)
        self._thread.start()

    def _watch(self, watcher: YClient, n: int) -> None:
        # the array's length, not its cells: converting every cell at each update would
        # bill the watcher's O(notebook) work to whichever side shares its process
        if watcher.wait_for(lambda w: len(w.cells_array) == n, 120):
            self.at = time.perf_counter()

    def wait(self) -> float:
        self._thread.join(130)
        assert self.at is not None, "the second client never saw the cells"
        return self.at


def timed(run: Callable[[], None], watcher: YClient, n: int) -> tuple[float, float]:
    """(visible, durable) seconds of ``run``, which makes ``n`` cells appear."""
    seen = Seen(watcher, n)
    start = time.perf_counter()
    run()
    done = time.perf_counter()
    visible = seen.wait()
    return visible - start, max(done, visible) - start


def through_planbook(server: RunningServer, n: int, cells: int = 1) -> tuple[float, float]:
    name = f"pb-{n}-{next(_names)}.ipynb"
    server.write_notebook(name, ["x = 1"] + [f"c{i} = {i}" for i in range(1, cells)])
    doc = open_live(server.url, server.token, name)
    watcher = YClient(server, name)
    try:
        session = Session(doc, Workspace(server.root))
        anchor = doc.cells()[0].id
        for i in range(n):
            step = session.propose.insert_cell(f"v{i} = {i}", after=anchor, reason="bench")
            anchor = step.operation.cell_id  # type: ignore[union-attr]

        def run() -> None:
            report = session.approve()
            assert report.ok and not report.notes, report.lines()

        return timed(run, watcher, n + cells)
    finally:
        watcher.close()
        doc.close()


def through_planbook_big(server: RunningServer, n: int) -> tuple[float, float]:
    return through_planbook(server, n, BIG)


def plain_pycrdt_big(server: RunningServer, n: int) -> tuple[float, float]:
    return plain_pycrdt(server, n, BIG)


def plain_pycrdt(server: RunningServer, n: int, cells: int = 1) -> tuple[float, float]:
    name = f"raw-{n}-{next(_names)}.ipynb"
    server.write_notebook(name, ["x = 1"] + [f"c{i} = {i}" for i in range(1, cells)])
    writer = YClient(server, name)
    watcher = YClient(server, name)
    try:

        def run() -> None:
            for i in range(n):
                writer.edit(
                    lambda ynb, i=i: ynb.ycells.append(
                        ynb.create_ycell(
                            {
                                "cell_type": "code",
                                "source": f"v{i} = {i}",
                                "metadata": {},
                                "outputs": [],
                                "execution_count": None,
                            }
                        )
                    )
                )
            status = writer.save()
            assert status == "success", f"the server did not save: {status or 'no answer'}"

        return timed(run, watcher, n + cells)
    finally:
        watcher.close()
        writer.close()


def spread(values: list[float]) -> str:
    ms = sorted(v * 1000 for v in values)
    return f"{ms[0]:.0f}/{statistics.median(ms):.0f}/{ms[-1]:.0f} ms"


def row(name: str, goal: str, measured: str, met: bool) -> dict[str, Any]:
    return {"name": name, "goal": goal, "measured": measured, "met": met}


def main() -> list[dict[str, Any]]:
    rows = []
    with start_jupyter(Path(tempfile.mkdtemp(prefix="bench-live-"))) as server:
        through_planbook(server, 1)  # warm up the server (first room, imports)
        plain_pycrdt(server, 1)
        # per N: side -> (visible times, durable times)
        results: dict[int, dict[str, tuple[list[float], list[float]]]] = {}
        for n in SIZES:
            measures: dict[str, Callable[[RunningServer, int], tuple[float, float]]] = {
                "planbook": through_planbook,
                "plain": plain_pycrdt,
            }
            if n == max(SIZES):
                measures[f"pb {BIG}c"] = through_planbook_big
                measures[f"plain {BIG}c"] = plain_pycrdt_big
            sides: dict[str, tuple[list[float], list[float]]] = {s: ([], []) for s in measures}
            for _ in range(ROUNDS):  # interleaved: every side sees the same machine load
                for side, measure in measures.items():
                    visible, durable = measure(server, n)
                    sides[side][0].append(visible)
                    sides[side][1].append(durable)
            results[n] = sides
        print("min/median/max of", ROUNDS, "interleaved rounds")
        print(f"{'steps':>5}  {'side':<11} {'visible':>20} {'durable':>20}")
        for n, sides in results.items():
            for side, (visible, durable) in sides.items():
                print(f"{n:>5}  {side:<11} {spread(visible):>20} {spread(durable):>20}")
            if f"pb {BIG}c" in sides:
                big, plain = (statistics.median(sides[f"{s} {BIG}c"][1]) for s in ("pb", "plain"))
                print(f"{n:>5}  {BIG}-cell notebook: durable ratio (medians) {big / plain:.1f}x")
            ours, base = (statistics.median(sides[s][1]) for s in ("planbook", "plain"))
            print(f"{n:>5}  durable ratio (medians) {ours / base:.1f}x")
        one = statistics.median(results[1]["planbook"][0])
        hundred = statistics.median(results[100]["planbook"][0])
        ours, base = (statistics.median(results[100][s][1]) for s in ("planbook", "plain"))
        raw = statistics.median(results[100]["plain"][0])
        rows.append(
            row("1 step visible to a 2nd client", "<= 50 ms", f"{one * 1000:.0f} ms", one <= 0.05)
        )
        rows.append(
            row("100 steps visible to a 2nd client", "<= 1 s", f"{hundred:.2f} s", hundred <= 1.0)
        )
        rows.append(
            row(
                "100 steps durable / plain pycrdt",
                "<= 5x",
                f"{ours / base:.1f}x",
                ours / base <= 5.0,
            )
        )
        big = statistics.median(results[100][f"pb {BIG}c"][1]) / statistics.median(
            results[100][f"plain {BIG}c"][1]
        )
        rows.append(
            row(
                f"100 steps in {BIG} cells durable / plain",
                "<= 5x",
                f"{big:.1f}x",
                big <= 5.0,
            )
        )
        print(
            f"(100 steps: planbook durable {ours:.2f} s; plain durable {base:.2f} s; plain "
            f"visible without waiting for anything {raw:.2f} s, {ours / raw:.1f}x)"
        )
    for r in rows:
        print(f"{r['name']:<36} goal {r['goal']:<9} measured {r['measured']:<9} met: {r['met']}")
    return rows


if __name__ == "__main__":
    main()
