"""Core storage and execution costs, planbook against the plain way, measured in one run.

Every comparison runs both sides in the same process and machine state, rounds interleaved
(A, B, A, B, ...), at least five rounds, and reports min / median / max and the ratio of the
medians. Kernel start-up is excluded on both sides.

1. Approving one step of a 2,000-cell, ~19 MB notebook with image outputs, against one plain
   ``nbformat.write`` of the same notebook.
2. A scaling table: the cost of step 10, 100 and 500 of an approved 502-step plan (each the
   median of five consecutive steps, timed by the executor's events) on notebooks of 10, 200
   and 2,000 small cells, five plans of each size, sizes interleaved.
3. A 50-step plan of small cells approved in a real kernel, against nbclient executing the
   same cells and saving after each one (with fsync: the same durability), and saving once.
4. Checkpoint size on an outputs-heavy notebook, against the zlib size of what the step changed
   (a checkpoint counted as its entry in the file, key included, plus the blobs it added).
5. ``%load_ext planbook`` in a fresh kernel, against ``%load_ext`` of a trivial extension
   (modules compiled once beforehand, as an installed package has them).

Run: ``python benchmarks/bench_core.py`` (or ``python benchmarks/run.py core``). ``main()``
returns the goal rows that ``benchmarks/run.py`` prints at the end.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import random
import statistics
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

ROUNDS = 5
KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}
Row = dict[str, Any]


def spread(values: list[float], unit: float = 1000.0) -> str:
    return (
        f"min {min(values) * unit:8.1f}  median {statistics.median(values) * unit:8.1f}  "
        f"max {max(values) * unit:8.1f} ms"
    )


def row(name: str, goal: str, measured: float, limit: float, unit: str = "x") -> Row:
    return {
        "name": name,
        "goal": goal,
        "measured": f"{measured:.2f}{unit}",
        "met": measured <= limit,
    }


def fake_png(size: int, rng: random.Random) -> str:
    """Base64 of incompressible bytes: what a real PNG looks like to zlib."""
    return base64.b64encode(rng.randbytes(size)).decode()


def write_notebook(path: Path, cells: int, *, png_bytes: int = 0, seed: int = 0) -> Path:
    rng = random.Random(seed)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    for i in range(cells):
        cell = nbformat.v4.new_code_cell(f"v{i} = {i} * 2\nprint('cell', {i}, v{i})")
        cell["id"] = f"c{i}"
        if png_bytes:
            cell.outputs = [
                nbformat.v4.new_output("stream", name="stdout", text=f"cell {i} {i * 2}\n"),
                nbformat.v4.new_output(
                    "display_data",
                    data={"image/png": fake_png(png_bytes, rng), "text/plain": "<Figure>"},
                ),
            ]
            cell.execution_count = i + 1
        nb.cells.append(cell)
    nbformat.write(nb, path)
    return path


def open_session(path: Path) -> Any:
    from planbook.documents.file import FileNotebook
    from planbook.sessions.session import Session
    from planbook.workspace.files import Workspace

    return Session(
        FileNotebook(path), Workspace(path.parent, protected=(path,)), notebook_path=path
    )


# --- 1. one step of a large notebook -------------------------------------------------------
def big_notebook_step(folder: Path) -> Row:
    path = write_notebook(folder / "big.ipynb", 2000, png_bytes=7000)
    plain_path = folder / "plain-big.ipynb"
    nb = nbformat.read(path, as_version=4)
    session = open_session(path)
    ours, plain = [], []
    for r in range(ROUNDS):
        session.propose.edit_cell(f"c{r * 7}", f"changed = {r}", reason="bench")
        start = time.perf_counter()
        report = session.approve()
        ours.append(time.perf_counter() - start)
        assert report.ok, str(report)
        start = time.perf_counter()
        nbformat.write(nb, plain_path)
        plain.append(time.perf_counter() - start)
    ratio = statistics.median(ours) / statistics.median(plain)
    print(f"1. one approved step, 2,000 cells, {path.stat().st_size / 1e6:.1f} MB")
    print(f"   planbook approve (edit step) : {spread(ours)}")
    print(f"   plain nbformat.write         : {spread(plain)}")
    print(f"   ratio                        : {ratio:.2f}x")
    return row("approve 1 step of a 19 MB notebook / nbformat.write", "<= 1.2x", ratio, 1.2)


# --- 2. scaling --------------------------------------------------------------------------------
def step_times(folder: Path, cells: int, marks: tuple[int, ...], name: str) -> dict[int, float]:
    """One approval of a 502-step plan; the cost of step N is the median of steps N-2..N+2,
    each timed from the executor's events."""
    path = write_notebook(folder / name, cells)
    session = open_session(path)
    ids = [c.id for c in session.cells()]
    for k in range(max(marks) + 2):
        session.propose.edit_cell(ids[k % len(ids)], f"v = {k}", reason="bench")
    finished: list[float] = []

    def on_event(event: Any) -> None:
        if event.kind == "step_finished":
            finished.append(time.perf_counter())

    session.subscribe(on_event)
    start = time.perf_counter()
    report = session.approve()
    assert report.ok, str(report)
    session.close()
    per_step = [b - a for a, b in itertools.pairwise([start, *finished])]
    return {m: statistics.median(per_step[m - 3 : m + 2]) for m in marks}


def scaling(folder: Path) -> list[Row]:
    """Each notebook size approved in ROUNDS separate plans, sizes interleaved; a mark's cost
    is its median over the rounds (a single plan is a few seconds of one machine's state)."""
    marks, sizes = (10, 100, 500), (10, 200, 2000)
    runs: dict[int, list[dict[int, float]]] = {cells: [] for cells in sizes}
    for r in range(ROUNDS):
        for cells in sizes:
            runs[cells].append(step_times(folder, cells, marks, f"scale-{cells}-{r}.ipynb"))
    print(f"2. step N of an approved 502-step plan, ms (median of steps N-2..N+2; {ROUNDS} plans)")
    rows = []
    for cells in sizes:
        times = {m: [run[m] for run in runs[cells]] for m in marks}
        growth = statistics.median(times[500]) / statistics.median(times[10])
        print(f"   {cells:>5} cells")
        for m in marks:
            print(f"     step {m:<4}: {spread(times[m])}")
        print(f"     step 500 / step 10 (medians): {growth:.2f}x")
        rows.append(row(f"step 500 / step 10 of a plan, {cells} cells", "<= 1.3x", growth, 1.3))
    return rows


# --- 3. a 50-step plan against nbclient --------------------------------------------------------
def run_in_kernel(folder: Path, code: str, env: dict[str, str] | None = None) -> str:
    """Run ``code`` in a fresh kernel started in ``folder``; its printed text."""
    km = KernelManager(kernel_name="python3")
    km.kernel_spec.argv[0] = sys.executable
    km.start_kernel(cwd=str(folder), env={**os.environ, "JPY_SESSION_NAME": "", **(env or {})})
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        out: list[str] = []

        def hook(msg: dict[str, Any]) -> None:
            if msg["msg_type"] == "stream":
                out.append(msg["content"]["text"])
            elif msg["msg_type"] == "error":
                out.append("\n".join(msg["content"]["traceback"]))

        kc.execute_interactive(code, output_hook=hook, timeout=600)
        return "".join(out)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def installed_env(folder: Path) -> dict[str, str]:
    """The environment of a kernel that imports planbook (and modules in ``folder``) as an
    installed package has them: compiled (pip compiles on install), where a source checkout run
    with PYTHONDONTWRITEBYTECODE would compile planbook's source in every kernel. The compiled
    files are kept in ``folder``, out of the repository; a first round (not counted) fills it."""
    return {
        "PYTHONPATH": os.pathsep.join([str(folder), *sys.path]),
        "PYTHONDONTWRITEBYTECODE": "",
        "PYTHONPYCACHEPREFIX": str(folder / "pycache"),
    }


def seconds_printed(out: str) -> float:
    """The figure a kernel printed after ``SECONDS``; RuntimeError with the end of what it
    printed (its traceback) when it printed none."""
    if "SECONDS" not in out:
        raise RuntimeError(out[-2000:])
    return float(out.split("SECONDS")[1].split()[0])


def planbook_50(path: Path) -> float:
    code = f"""
import time, planbook
pb = planbook.session(notebook={str(path)!r}, live=False)
for cell in pb.cells():
    pb.propose.run_cell(cell.id, reason='bench')
t = time.perf_counter()
report = pb.approve()
print('SECONDS', time.perf_counter() - t, report.ok)
"""
    text = run_in_kernel(path.parent, code)
    seconds, ok = text.split("SECONDS")[1].split()[:2]
    assert ok == "True", text
    return float(seconds)


def nbclient_50(path: Path, *, save_each: bool) -> float:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    with client.setup_kernel():
        start = time.perf_counter()
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
            if save_each:
                durable_write(nb, path)
        if not save_each:
            durable_write(nb, path)
        return time.perf_counter() - start


def durable_write(nb: nbformat.NotebookNode, path: Path) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        nbformat.write(nb, handle)
        handle.flush()
        os.fsync(handle.fileno())


def fifty_steps(folder: Path) -> list[Row]:
    sides: dict[str, Callable[[Path], float]] = {
        "planbook approve (50 run steps)": planbook_50,
        "nbclient, save after each cell": lambda p: nbclient_50(p, save_each=True),
        "nbclient, save once": lambda p: nbclient_50(p, save_each=False),
    }
    times: dict[str, list[float]] = {name: [] for name in sides}
    for r in range(ROUNDS):
        for name, side in sides.items():
            path = write_notebook(folder / f"fifty-{r}-{len(times[name])}-{hash(name)}.ipynb", 50)
            times[name].append(side(path))
    print("3. a 50-step plan of small cells (kernel start excluded)")
    for name, values in times.items():
        print(f"   {name:<33}: {spread(values)}")
    ours = statistics.median(times["planbook approve (50 run steps)"])
    each = ours / statistics.median(times["nbclient, save after each cell"])
    once = ours / statistics.median(times["nbclient, save once"])
    print(f"   ratio to nbclient saving each: {each:.2f}x; saving once: {once:.2f}x")
    return [
        row("50 small steps / nbclient saving after each", "<= 1.10x", each, 1.10),
        row("50 small steps / nbclient saving once", "<= 1.5x", once, 1.5),
    ]


# --- 4. checkpoint size --------------------------------------------------------------------
def entry_bytes(value: Any) -> int:
    return len(json.dumps(value, indent=1, ensure_ascii=False))


def checkpoint_bytes(path: Path, before: dict[str, Any]) -> int:
    """The new checkpoint entries, each with its key (the checkpoint's id), and new blobs."""
    meta = json.loads(path.read_text(encoding="utf-8"))["metadata"]["planbook"]
    old = {k for b in before["checkpoints"].values() for k in b}
    new = [(k, cp) for b in meta["checkpoints"].values() for k, cp in b.items() if k not in old]
    blobs = [(k, v) for k, v in meta["blobs"].items() if k not in before["blobs"]]
    return sum(len(k) + 4 + entry_bytes(cp) for k, cp in new) + sum(
        len(k) + len(v) + 6 for k, v in blobs
    )


def zlib_size(value: Any) -> int:
    return len(zlib.compress(json.dumps(value, ensure_ascii=False).encode(), 9))


def checkpoint_sizes(folder: Path) -> list[Row]:
    path = write_notebook(folder / "plots.ipynb", 20, png_bytes=300_000, seed=1)
    nb = nbformat.read(path, as_version=4)
    cases = {
        "delete a cell with a 400 KB plot": (
            lambda s: s.propose.delete_cell("c3", reason="bench"),
            {k: nb.cells[3][k] for k in ("source", "outputs", "metadata", "execution_count")},
        ),
        "edit a 2 KB source beside a plot": (
            lambda s: s.propose.edit_cell("c5", "x = 1", reason="bench"),
            None,
        ),
        "edit 2 KB of real code beside a plot": (
            lambda s: s.propose.edit_cell("c11", "y = 2", reason="bench"),
            None,
        ),
        "move a cell with a plot": (
            lambda s: s.propose.move_cell("c7", after="c9", reason="bench"),
            None,
        ),
    }
    # a long source for the edit case, so the change is not a few bytes
    long_source = "\n".join(f"value_{j} = compute({j}) * {j} + offset" for j in range(60))
    nb.cells[5].source = long_source
    # and 2 KB of real code (less repetitive than the line above: it compresses less)
    real_code = Path(json.__file__).with_name("encoder.py").read_text()[3000:5100]
    nb.cells[11].source = real_code
    nbformat.write(nb, path)
    for name, text in (
        ("edit a 2 KB source beside a plot", long_source),
        ("edit 2 KB of real code beside a plot", real_code),
    ):
        cases[name] = (cases[name][0], text)
    session = open_session(path)
    rows = []
    print("4. checkpoint bytes (as written in the file) against the zlib size of the change")
    for name, (stage, changed) in cases.items():
        before = json.loads(path.read_text(encoding="utf-8"))["metadata"].get(
            "planbook", {"checkpoints": {}, "blobs": {}}
        )
        before.setdefault("checkpoints", {})
        before.setdefault("blobs", {})
        stage(session)
        assert session.approve().ok
        size = checkpoint_bytes(path, before)
        if changed is None:
            print(f"   {name:<36}: {size:>8} bytes (nothing but a position changed)")
            continue
        base = zlib_size(changed)
        ratio = size / base
        print(f"   {name:<36}: {size:>8} bytes, change zlib {base:>8} bytes: {ratio:.2f}x")
        rows.append(row(f"checkpoint / zlib of change: {name}", "<= 1.5x", ratio, 1.5))
    return rows


# --- 5. %load_ext --------------------------------------------------------------------------
def load_ext(folder: Path) -> Row:
    (folder / "trivial_ext.py").write_text("def load_ipython_extension(ip):\n    pass\n")
    nb = folder / "loaded.ipynb"
    write_notebook(nb, 3)
    code = (
        "import time\nt = time.perf_counter()\n"
        "get_ipython().run_line_magic('load_ext', {name!r})\n"
        "print('SECONDS', time.perf_counter() - t)\n"
    )
    env = {"JPY_SESSION_NAME": str(nb), **installed_env(folder)}
    ours, plain = [], []
    for r in range(ROUNDS + 1):
        for name, into in (("planbook", ours), ("trivial_ext", plain)):
            text = run_in_kernel(folder, code.format(name=name), env)
            if r:
                into.append(seconds_printed(text))
    median = statistics.median(ours)
    print("5. %load_ext in a fresh kernel (the notebook found through JPY_SESSION_NAME)")
    print(f"   %load_ext planbook           : {spread(ours)}")
    print(f"   %load_ext of a trivial module: {spread(plain)}")
    return row("%load_ext planbook (absolute)", "<= 300 ms", median * 1000, 300, unit=" ms")


def main() -> list[Row]:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for part in (big_notebook_step, scaling, fifty_steps, checkpoint_sizes, load_ext):
            result = part(folder)
            rows += result if isinstance(result, list) else [result]
            sys.stdout.flush()
    return rows


if __name__ == "__main__":
    for r in main():
        print(f"{r['name']:<60} goal {r['goal']:<10} measured {r['measured']:<10} met {r['met']}")
