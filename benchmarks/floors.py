"""What every row of the benchmark table is made of: a measured side, its floor (the least work
that does the same job) and, where it tells a user something, the baseline they know (nbformat,
nbclient), all measured in one run, rounds interleaved (A B C A B C ...), reported as min /
median / max, with the ratio of the medians to the floor.

Not pyperf: its workers run one benchmark after another, each calibrated into many loops of
a side-effect-free call, while these sides write and fsync files, start kernels and browsers,
and must share the machine's moment with their floor (interleaved), which matters more on a
shared machine than calibration; the JSON written here holds every raw figure instead.
"""

from __future__ import annotations

import gc
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
from bench_core import open_session, write_notebook

__all__ = ["durable_save", "interleaved", "nbformat_save", "notebook", "open_session", "row"]

Row = dict[str, Any]


def interleaved(
    sides: dict[str, Callable[[], float]], rounds: int, warmup: int = 1
) -> dict[str, list[float]]:
    """Each side returns the seconds of what it measures (its set-up excluded); ``warmup``
    rounds first, not counted (first-use costs: imports, schema builds, page cache)."""
    times: dict[str, list[float]] = {name: [] for name in sides}
    for r in range(warmup + rounds):
        for name, side in sides.items():
            gc.collect()
            seconds = side()
            if r >= warmup:
                times[name].append(seconds)
    return times


def spread(values: list[float]) -> dict[str, float]:
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def text(values: list[float], unit: float = 1000.0) -> str:
    s = spread(values)
    return f"{s['min'] * unit:.1f} / {s['median'] * unit:.1f} / {s['max'] * unit:.1f}"


def row(
    name: str,
    ours: list[float],
    floor: list[float] | None,
    floor_name: str,
    limit: float,
    *,
    baseline: list[float] | None = None,
    baseline_name: str = "",
    unit: str = "ms",
    scale: float = 1000.0,
    absolute: bool = False,
    x: dict[str, Any] | None = None,
) -> Row:
    """A table row. ``limit``: the most the ratio to the floor may be (``absolute``: the most
    the median of ours may be, in ``unit``). ``x``: where the row sits on the plot."""
    median = statistics.median(ours)
    ratio = median / statistics.median(floor) if floor else None
    measured = median * scale if absolute else ratio
    out: Row = {
        "name": name,
        "unit": unit,
        "scale": scale,
        "ours": ours,
        "ours_text": text(ours, scale),
        "floor_name": floor_name,
        "floor": floor,
        "floor_text": text(floor, scale) if floor else "",
        "ratio": ratio,
        "limit": limit,
        "absolute": absolute,
        "goal": f"<= {limit:g} {unit}" if absolute else f"<= {limit:g}x floor",
        "measured": f"{measured:.1f} {unit}" if absolute else f"{ratio:.2f}x",
        "met": measured is not None and measured <= limit,
        "x": x or {},
    }
    if baseline:
        out["baseline_name"] = baseline_name
        out["baseline"] = baseline
        out["baseline_text"] = text(baseline, scale)
        out["baseline_ratio"] = median / statistics.median(baseline)
    return out


def durable_save(path: Path, data: bytes) -> float:
    """The floor of a save: write the bytes to a temporary file, fsync, rename over."""
    tmp = path.with_name(f".{path.name}.floor")
    start = time.perf_counter()
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    return time.perf_counter() - start


def nbformat_save(nb: nbformat.NotebookNode, path: Path) -> float:
    """What a user's tool does: nbformat.write, made as durable (fsync)."""
    start = time.perf_counter()
    with open(path, "w", encoding="utf-8") as handle:
        nbformat.write(nb, handle)
        handle.flush()
        os.fsync(handle.fileno())
    return time.perf_counter() - start


def notebook(path: Path, cells: int, megabytes: float = 0.0, seed: int = 0) -> Path:
    """``cells`` code cells, each with a stream output and, when ``megabytes``, an image
    output of incompressible base64 (what a PNG looks like), the file about that size."""
    png = int(megabytes * 1e6 / cells / 1.37) if megabytes else 0
    return write_notebook(path, cells, png_bytes=png, seed=seed)
