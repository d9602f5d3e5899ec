"""What running an approved shell step through an overlay costs, against running it plainly.

The overlay way is the whole approved step: ``Session.approve`` of a staged shell step (the
command in an overlay of the workspace under bubblewrap, its layer read, every path it changes
checkpointed, the layer applied, the result recorded). The plain way is ``/bin/sh -c`` in the
same folder. Three commands: one that writes 1 file, 100 files and 100 MB. Runs are
interleaved (plain, overlay, plain, overlay...) so load on the machine hits both alike; the
outputs are removed between runs, outside the timing. Printed: each way's times and the ratio
overlay / plain as min, median and max over the pairs.

    python benchmarks/bench_shell.py [--runs 7]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from floors import row  # noqa: E402

from planbook.documents.memory import MemoryNotebook  # noqa: E402
from planbook.sessions.session import Session  # noqa: E402
from planbook.workspace.files import Workspace  # noqa: E402
from planbook.workspace.overlay import overlay_probe  # noqa: E402

COMMANDS = {
    "1 file": "echo one > out.txt",
    "100 files": "mkdir -p out && for i in $(seq 100); do echo $i > out/f$i.txt; done",
    "100 MB": "head -c 100000000 /dev/zero > big.bin",
}
#: What a row must stay under: the overlay's fixed cost shows on tiny commands, the copy of
#: the layer into the workspace on big ones.
GOALS = {"1 file": 40.0, "100 files": 15.0, "100 MB": 4.0}


def _clean(root: Path) -> None:
    for name in ("out.txt", "out", "big.bin"):
        path = root / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()


def measure(name: str, command: str, runs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-shell-") as tmp:
        root = Path(tmp)
        (root / "data.txt").write_text("some data\n")
        session = Session(MemoryNotebook(cells=[]), Workspace(root))
        plain: list[float] = []
        layered: list[float] = []
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run(["/bin/sh", "-c", command], cwd=root, check=True)
            plain.append(time.perf_counter() - start)
            _clean(root)
            session.propose.shell(command, reason="bench")
            start = time.perf_counter()
            report = session.approve()
            layered.append(time.perf_counter() - start)
            assert report.ok, report
            _clean(root)
    ratios = sorted(o / p for o, p in zip(layered, plain, strict=True))
    return {"name": name, "plain": plain, "overlay": layered, "ratios": ratios}


def _ms(values: list[float]) -> str:
    return (
        f"min {min(values) * 1000:7.1f}  median {statistics.median(values) * 1000:7.1f}  "
        f"max {max(values) * 1000:7.1f} ms"
    )


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args(argv if argv is not None else [])
    status = overlay_probe()
    if not status.available:
        print(f"skipped: {status.reason}")
        return []
    rows = []
    for name, command in COMMANDS.items():
        result = measure(name, command, args.runs)
        r = result["ratios"]
        print(f"{name:<10} plain   {_ms(result['plain'])}")
        print(f"{'':<10} overlay {_ms(result['overlay'])}")
        print(
            f"{'':<10} ratio   min {r[0]:.2f}x  median {statistics.median(r):.2f}x  "
            f"max {r[-1]:.2f}x"
        )
        # the floor is the command itself, run plainly in the same folder, interleaved
        rows.append(
            row(
                f"approved shell step through an overlay, {name}",
                result["overlay"],
                result["plain"],
                "/bin/sh -c, plainly",
                GOALS[name],
            )
        )
    return rows


if __name__ == "__main__":
    for row in main(sys.argv[1:]):
        print(row)
