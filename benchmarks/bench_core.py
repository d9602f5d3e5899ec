"""Core overhead, measured side by side in one run.

1. A 50-step plan of small cells run through planbook (``%approve`` in a real kernel, each step
   with its approval-hash check, drift check, checkpoint and save) against the same 50 cells
   executed directly with nbclient in a kernel of the same kind, then saved.
2. Metadata bytes added per checkpoint on a 5 MB notebook against the size of the changed content.

Run: ``python benchmarks/bench_core.py``
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

STEPS = 50


def small_cells_notebook(path: Path, n: int = STEPS) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    for i in range(n):
        cell = nbformat.v4.new_code_cell(f"v{i} = {i} * 2\nprint('cell', {i}, v{i})")
        cell["id"] = f"c{i}"
        nb.cells.append(cell)
    nbformat.write(nb, path)
    return path


def plain_nbclient(path: Path) -> float:
    """Seconds to execute every cell with nbclient and save the result (kernel start excluded)."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    with client.setup_kernel():
        start = time.perf_counter()
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        nbformat.write(nb, path)
        return time.perf_counter() - start


def through_planbook(path: Path) -> tuple[float, float]:
    """Seconds to stage and to approve+run a plan of one run_cell step per cell, in a kernel."""
    code = f"""
import time, planbook
pb = planbook.session(notebook={str(path)!r})
t0 = time.perf_counter()
for cell in pb.cells():
    pb.propose.run_cell(cell.id, reason='benchmark')
t1 = time.perf_counter()
report = pb.approve()
t2 = time.perf_counter()
assert report.ok, str(report)
print('TIMES', t1 - t0, t2 - t1)
"""
    runner = nbformat.v4.new_notebook()
    runner.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    runner.cells.append(nbformat.v4.new_code_cell(code))
    client = NotebookClient(
        runner,
        kernel_name="python3",
        timeout=600,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    text = "".join(o.get("text", "") for o in runner.cells[0].outputs)
    stage, run = (float(x) for x in text.split("TIMES")[1].split())
    return stage, run


def metadata_growth(folder: Path) -> tuple[int, int, int, float]:
    """(notebook bytes, metadata bytes per checkpoint, changed bytes per step, ratio)."""
    from planbook.documents.file import FileNotebook
    from planbook.session import Session
    from planbook.workspace import Workspace

    path = folder / "big.ipynb"
    nb = nbformat.v4.new_notebook()
    for i in range(1000):  # ~5 MB: 1000 cells of ~5 kB code each
        body = "\n".join(
            f"result_{i}_{j} = compute(data[{j}], factor={j * 0.5})  # step {j}" for j in range(80)
        )
        cell = nbformat.v4.new_code_cell(body)
        cell["id"] = f"big{i}"
        nb.cells.append(cell)
    nbformat.write(nb, path)
    size = path.stat().st_size
    session = Session(FileNotebook(path), Workspace(folder, protected=(path,)), notebook_path=path)
    edits = 10
    changed = 0
    for i in range(edits):
        old = nb.cells[i * 7].source
        new = old.replace("factor=", "weight=")
        changed += len(old.encode()) + len(new.encode())
        session.propose.edit_cell(f"big{i * 7}", new, reason="rename factor to weight")
    before = len(json.dumps(nbformat.read(path, as_version=4).metadata["planbook"]))
    assert session.approve().ok
    after = len(json.dumps(nbformat.read(path, as_version=4).metadata["planbook"]))
    per_checkpoint = (after - before) // edits
    per_change = changed // edits
    return size, per_checkpoint, per_change, per_checkpoint / per_change


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        plain = plain_nbclient(small_cells_notebook(folder / "plain.ipynb"))
        stage, run = through_planbook(small_cells_notebook(folder / "planned.ipynb"))
        size, per_cp, per_change, ratio = metadata_growth(folder)
    print("50-step plan of small cells (one run in a real kernel each way)")
    print(f"  nbclient, execute + save          : {plain * 1000 / STEPS:8.2f} ms per cell")
    print(f"  planbook, approve + run           : {run * 1000 / STEPS:8.2f} ms per step")
    print(f"  planbook, staging                 : {stage * 1000 / STEPS:8.2f} ms per step")
    print(f"  overhead per step                 : {(run - plain) * 1000 / STEPS:8.2f} ms")
    print(f"  ratio planbook / nbclient         : {run / plain:8.2f}x")
    print(f"metadata growth on a {size / 1e6:.1f} MB notebook (10 edited cells)")
    print(f"  metadata bytes per checkpoint     : {per_cp:8d}")
    print(f"  changed content per step (old+new): {per_change:8d}")
    print(f"  ratio                             : {ratio:8.2f}x")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
