"""Run every benchmark in this folder, one after the other: ``python benchmarks/run.py``.

Each ``bench_*.py`` has a ``main()`` that measures planbook and the plain way of doing the same
thing side by side in one run and prints the ratio. ``python benchmarks/run.py core`` runs one.

A ``main()`` may return rows, each a dict with ``name``, ``goal``, ``measured`` (text) and
``met`` (bool); they are printed together at the end as a goal / measured / met table.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(HERE.parent))
    names = sorted(p.stem for p in HERE.glob("bench_*.py"))
    wanted = [n for n in names if not argv or n.removeprefix("bench_") in argv]
    if not wanted:
        print(
            f"no benchmark named {' '.join(argv)}; there are: "
            + ", ".join(n.removeprefix("bench_") for n in names),
            file=sys.stderr,
        )
        return 2
    failed = 0
    rows: list[dict[str, Any]] = []
    for name in wanted:
        print(f"\n=== {name} ===", flush=True)
        spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        start = time.perf_counter()
        try:
            spec.loader.exec_module(module)
            result = module.main()
            rows += [{**r, "bench": name.removeprefix("bench_")} for r in result or []]
        except Exception as exc:  # one broken benchmark must not hide the others' numbers
            failed += 1
            print(f"{name} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        print(f"({name} took {time.perf_counter() - start:.0f} s)", flush=True)
    if rows:
        width = max(len(r["name"]) for r in rows)
        print(f"\n{'goal':<{width + 8}} {'target':<10} {'measured':<12} met")
        for r in rows:
            name, met = f"{r['bench']}: {r['name']}", "yes" if r["met"] else "NO"
            print(f"{name:<{width + 8}} {r['goal']:<10} {r['measured']:<12} {met}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
