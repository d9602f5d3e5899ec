"""Run every benchmark in this folder and write what they measured: ``python benchmarks/run.py``.

Each ``bench_*.py`` has a ``main()`` that measures planbook and the plain way of doing the same
thing side by side in one run. ``python benchmarks/run.py floor core`` runs some of them.

A ``main()`` returns rows (see ``floors.row``: a name, the goal, what was measured, whether it
was met; rows made by ``floors.row`` also hold every raw figure and the floor's). At the end
the rows are printed as one table and, when every benchmark ran (or ``--write``), written:
the table between the markers of ``docs/performance.md``, every figure to
``docs/performance.json``, and the plot of cost against notebook size and plan length to
``docs/performance.png``. Everything temporary lives in one folder removed at the end (TMPDIR
points there for the kernels and browsers the benchmarks start): nothing is left in /tmp.
"""

from __future__ import annotations

import datetime
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DOCS = HERE.parent / "docs"
BEGIN, END = "<!-- table: benchmarks/run.py -->", "<!-- end of table -->"


def machine() -> dict[str, Any]:
    cpu = "unknown"
    with (
        open("/proc/cpuinfo", encoding="utf-8")
        if Path("/proc/cpuinfo").exists()
        else (open(os.devnull, encoding="utf-8")) as info
    ):
        for line in info:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    disk = subprocess.run(
        ["df", "-T", str(HERE)], capture_output=True, text=True, check=False
    ).stdout.splitlines()[-1:]
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "file system": disk[0].split()[1] if disk else "unknown",
        "load average": os.getloadavg(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="minutes"),
    }


def run_all(wanted: list[str]) -> tuple[list[dict[str, Any]], int]:
    failed = 0
    rows: list[dict[str, Any]] = []
    for name in wanted:
        print(f"\n=== {name} (load average {os.getloadavg()[0]:.1f}) ===", flush=True)
        spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        start = time.perf_counter()
        load = os.getloadavg()[0]
        try:
            spec.loader.exec_module(module)
            result = module.main()
            for r in result or []:
                rows.append({**r, "bench": name.removeprefix("bench_"), "load": load})
        except Exception as exc:  # one broken benchmark must not hide the others' numbers
            failed += 1
            print(f"{name} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        print(f"({name} took {time.perf_counter() - start:.0f} s)", flush=True)
    return rows, failed


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| what | planbook (min / median / max) | floor (min / median / max) | ratio to floor "
        "| goal | met | baseline a user knows | load |\n| --- | --- | --- | --- | --- | --- | --- "
        "| --- |"
    )
    lines = [head]
    for r in rows:
        unit = r.get("unit", "")
        ours = f"{r['ours_text']} {unit}" if "ours_text" in r else r["measured"]
        floor = f"{r['floor_name']}: {r['floor_text']} {unit}" if r.get("floor_text") else ""
        ratio = f"{r['ratio']:.2f}x" if r.get("ratio") is not None else r["measured"]
        base = ""
        if r.get("baseline_text"):
            base = f"{r['baseline_name']}: {r['baseline_text']} {unit} ({r['baseline_ratio']:.2f}x)"
        met = "yes" if r["met"] else "**no**"
        lines.append(
            f"| {r['bench']}: {r['name']} | {ours} | {floor} | {ratio} | {r['goal']} | {met} "
            f"| {base} | {r.get('load', 0):.1f} |"
        )
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], out: Path) -> None:
    import matplotlib  # heavy: only the writing of the plot needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (by_size, by_length) = plt.subplots(1, 2, figsize=(12, 4.5))
    series: dict[str, list[tuple[float, float]]] = {}
    floors: list[tuple[float, float]] = []
    for r in rows:
        x = r.get("x") or {}
        if x.get("plot") == "size":
            series.setdefault(x["series"], []).append((x["mb"], r["ours"]))
            if x["series"] == "approve + edit step":
                floors.append((x["mb"], r["floor"]))
    for name, points in series.items():
        points.sort()
        xs = [p[0] for p in points]
        by_size.plot(xs, [_median(p[1]) * 1000 for p in points], marker="o", label=name)
    if floors:
        floors.sort()
        by_size.plot(
            [p[0] for p in floors],
            [_median(p[1]) * 1000 for p in floors],
            marker="s",
            linestyle="--",
            label="floor: one durable save",
        )
    by_size.set_xlabel("notebook size (MB)")
    by_size.set_ylabel("ms (median)")
    by_size.set_title("cost against notebook size")
    by_size.legend(fontsize=8)
    for r in rows:
        x = r.get("x") or {}
        if x.get("plot") == "length" and "marks" in x:
            marks = sorted((int(m), v) for m, v in x["marks"].items())
            by_length.plot(
                [m for m, _ in marks],
                [_median(v) * 1000 for _, v in marks],
                marker="o",
                label=x["series"],
            )
    by_length.set_xlabel("step number in the plan")
    by_length.set_ylabel("ms per staged step (median)")
    by_length.set_title("staging cost against plan length (flat is the claim)")
    by_length.set_ylim(bottom=0)
    by_length.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def write(rows: list[dict[str, Any]], about: dict[str, Any]) -> None:
    page = DOCS / "performance.md"
    text = page.read_text(encoding="utf-8")
    when = (
        f"Measured {about['date']} on {about['cpu']} ({about['cores']} cores, shared), Linux "
        f"{about['kernel']}, {about['file system']}, Python {about['python']}; load average "
        f"{about['load average'][0]:.1f} at the end (each row's load is the 1-minute load "
        "average when its benchmark started). Times in ms unless the row says otherwise."
    )
    block = f"{BEGIN}\n{when}\n\n{table(rows)}\n{END}"
    if BEGIN in text and END in text:
        text = text[: text.index(BEGIN)] + block + text[text.index(END) + len(END) :]
    else:
        text += "\n" + block + "\n"
    page.write_text(text, encoding="utf-8")
    figures = {"machine": about, "rows": rows}
    (DOCS / "performance.json").write_text(json.dumps(figures, indent=1) + "\n", "utf-8")
    plot(rows, DOCS / "performance.png")
    print(f"wrote {page}, docs/performance.json and docs/performance.png")


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(HERE.parent))
    sys.path.insert(0, str(HERE))
    write_out = "--write" in argv
    argv = [a for a in argv if a != "--write"]
    names = sorted(p.stem for p in HERE.glob("bench_*.py"))
    wanted = [n for n in names if not argv or n.removeprefix("bench_") in argv]
    if not wanted:
        print(
            f"no benchmark named {' '.join(argv)}; there are: "
            + ", ".join(n.removeprefix("bench_") for n in names),
            file=sys.stderr,
        )
        return 2
    scratch = tempfile.mkdtemp(prefix="planbook-bench-")
    before = set(os.listdir(tempfile.gettempdir()))
    os.environ["TMPDIR"] = scratch
    tempfile.tempdir = scratch
    try:
        rows, failed = run_all(wanted)
    finally:
        tempfile.tempdir = None
        os.environ.pop("TMPDIR", None)
        shutil.rmtree(scratch, ignore_errors=True)
    left = set(os.listdir(tempfile.gettempdir())) - before
    if left:
        print(f"left in {tempfile.gettempdir()} meanwhile (ours or another process's): {left}")
    if rows:
        print("\n" + table(rows))
    if rows and (write_out or not argv):
        write(rows, machine())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
