"""Checking a long plan before approval: 1,000 steps against 10,000 steps, interleaved.

What is checked is what approval checks (the selection and its dependencies, the dry run, the
approval hash) and the views the person approves from. The goal is linear growth: the floor of
10,000 steps is ten times what 1,000 cost (each round's own 1,000-step time, times ten), and
10,000 steps may cost at most 1.5 times that (the ratio of the medians; it was quadratic,
~67 s for 10,000 steps, before the checks found steps and cells by id).
"""

from __future__ import annotations

import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROUNDS = 5
Row = dict[str, Any]


def main() -> list[Row]:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from floors import row, spread

    from tests.attack.test_exhaustion import big_plan, check_before_approving

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        small, large = big_plan(folder, 1_000), big_plan(folder, 10_000)
        check_before_approving(*small)
        check_before_approving(*large)
        times: dict[int, list[float]] = {1_000: [], 10_000: []}
        for _ in range(ROUNDS):  # interleaved: a busy moment hurts both sizes alike
            for size, plan in ((1_000, small), (10_000, large)):
                gc.collect()
                start = time.perf_counter()
                check_before_approving(*plan)
                times[size].append(time.perf_counter() - start)
    for size, values in times.items():
        print(f"   check {size:>6,} steps         : {spread(values)}")
    linear = [t * 10 for t in times[1_000]]
    ratio = statistics.median(times[10_000]) / statistics.median(linear)
    print(f"   10,000 steps / 10 x 1,000 steps: {ratio:.2f}x")
    return [
        row(
            "check a plan of 10,000 steps before approving",
            times[10_000],
            linear,
            "1,000 steps, times 10 (linear)",
            1.5,
            x={"steps": 10_000},
        )
    ]


if __name__ == "__main__":
    for r in main():
        print(f"{r['name']:<60} goal {r['goal']:<10} measured {r['measured']:<10} met {r['met']}")
