"""Live backend: time from approval to the change visible in a second client.

A real JupyterLab server with jupyter-collaboration; a planbook Session on a LiveNotebook stages
N insert-cell steps; the clock starts at ``approve()`` and stops when a second client (plain
pycrdt) has every new cell. Each approved step runs behind its approval-hash check, drift check
and checkpoint, and the plan metadata is saved into the shared document after each change.
The baseline: a plain pycrdt client making the same N inserts directly, one update each, timed
the same way. Printed for N = 1 and N = 100 (median of a few rounds), with the ratio.

Run: ``python benchmarks/bench_live.py``
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planbook.documents.live import open_live
from planbook.session import Session
from planbook.workspace import Workspace
from tests.live.yclient import YClient
from tests.support.jupyter_server import RunningServer, start_jupyter

ROUNDS = 3


def through_planbook(server: RunningServer, name: str, n: int) -> float:
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


def plain_pycrdt(server: RunningServer, name: str, n: int) -> float:
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


def main() -> None:
    with start_jupyter(Path(tempfile.mkdtemp(prefix="bench-live-"))) as server:
        print("steps  planbook approve->visible (s)  plain pycrdt (s)  ratio")
        for n in (1, 100):
            ours = statistics.median(
                through_planbook(server, f"pb-{n}-{r}.ipynb", n) for r in range(ROUNDS)
            )
            base = statistics.median(
                plain_pycrdt(server, f"raw-{n}-{r}.ipynb", n) for r in range(ROUNDS)
            )
            print(f"{n:>5}  {ours:>29.3f}  {base:>16.3f}  {ours / base:>5.1f}")
            print(
                f"       per step: {ours / n * 1000:.1f} ms planbook, "
                f"{base / n * 1000:.2f} ms plain"
            )


if __name__ == "__main__":
    main()
