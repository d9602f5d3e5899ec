"""Live backend: time from approval to the change visible in a second client.

A real JupyterLab server with jupyter-collaboration; a planbook Session on a LiveNotebook stages
N insert-cell steps; the clock starts at ``approve()`` and stops when a second client (plain
pycrdt) has every new cell. Each approved step runs behind its approval-hash check, drift check
and checkpoint, and the plan's record is written into the shared document with each step (by
part); the room is saved at the approval and at the end of the run (durability, issue 15).
The floor: a plain pycrdt client making the same N inserts directly, one update each, timed
the same way. Rounds alternate planbook and plain (interleaved), ``ROUNDS`` each, for N = 1 and
N = 100; printed as min/median/max, with the goal rows ``benchmarks/run.py`` tabulates.

Run: ``python benchmarks/bench_live.py`` (or ``python benchmarks/run.py live``)
"""

from __future__ import annotations

import itertools
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planbook.documents.live import open_live
from planbook.session import Session
from planbook.workspace import Workspace
from tests.live.yclient import YClient
from tests.support.jupyter_server import RunningServer, start_jupyter

ROUNDS = 5
_names = itertools.count()


def through_planbook(server: RunningServer, n: int) -> float:
    name = f"pb-{n}-{next(_names)}.ipynb"
    server.write_notebook(name, ["x = 1"])
    doc = open_live(server.url, server.token, name)
    watcher = YClient(server, name)
    try:
        session = Session(doc, Workspace(server.root))
        anchor = doc.cells()[0].id
        for i in range(n):
            step = session.propose.insert_cell(f"v{i} = {i}", after=anchor, reason="bench")
            anchor = step.operation.cell_id  # type: ignore[union-attr]
        start = time.perf_counter()
        report = session.approve()
        assert watcher.wait_for(lambda w: len(w.ids()) == n + 1, 120), "never seen"
        elapsed = time.perf_counter() - start
        assert report.ok, report.lines()
        return elapsed
    finally:
        watcher.close()
        doc.close()


def plain_pycrdt(server: RunningServer, n: int) -> float:
    name = f"raw-{n}-{next(_names)}.ipynb"
    server.write_notebook(name, ["x = 1"])
    writer = YClient(server, name)
    watcher = YClient(server, name)
    try:
        start = time.perf_counter()
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
        assert watcher.wait_for(lambda w: len(w.ids()) == n + 1, 120), "never seen"
        return time.perf_counter() - start
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
        print("steps  planbook approve->visible (min/median/max)  plain pycrdt  median ratio")
        results: dict[int, tuple[list[float], list[float]]] = {}
        for n in (1, 100):
            ours: list[float] = []
            base: list[float] = []
            for _ in range(ROUNDS):  # interleaved: both sides see the same machine load
                ours.append(through_planbook(server, n))
                base.append(plain_pycrdt(server, n))
            ratio = statistics.median(ours) / statistics.median(base)
            results[n] = (ours, base)
            print(f"{n:>5}  {spread(ours):>42}  {spread(base):>12}  {ratio:>6.1f}x")
        one = statistics.median(results[1][0])
        hundred, floor = (statistics.median(v) for v in results[100])
        rows.append(
            row("1 step visible to a 2nd client", "<= 50 ms", f"{one * 1000:.0f} ms", one <= 0.05)
        )
        rows.append(
            row("100 steps visible to a 2nd client", "<= 1 s", f"{hundred:.2f} s", hundred <= 1.0)
        )
        rows.append(
            row(
                "100 steps / plain pycrdt floor",
                "<= 5x",
                f"{hundred / floor:.1f}x",
                hundred / floor <= 5.0,
            )
        )
    for r in rows:
        print(f"{r['name']:<36} goal {r['goal']:<9} measured {r['measured']:<9} met: {r['met']}")
    return rows


if __name__ == "__main__":
    main()
