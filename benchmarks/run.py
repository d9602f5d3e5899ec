"""Run every benchmark in this folder, one after the other: ``python benchmarks/run.py``.

Each ``bench_*.py`` has a ``main()`` that measures planbook and the plain way of doing the same
thing side by side in one run and prints the ratio. ``python benchmarks/run.py core`` runs one.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

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
    for name in wanted:
        print(f"\n=== {name} ===", flush=True)
        spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        start = time.perf_counter()
        try:
            spec.loader.exec_module(module)
            module.main()
        except Exception as exc:  # one broken benchmark must not hide the others' numbers
            failed += 1
            print(f"{name} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        print(f"({name} took {time.perf_counter() - start:.0f} s)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
