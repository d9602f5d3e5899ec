"""The second client of bench_live.py, in a process of its own, as a page in a browser is.

In the measured side's process, the watcher's thread would wait for the GIL while that side
goes on working after its last update (planbook writes the run's end; the plain client waits
for its save), up to the interpreter's switch interval (5 ms) each time: the time a second
client takes to see a change would then depend on what the writer does after sending it.

Protocol, one line each way, on stdin and stdout: ``watch <notebook> <cells>`` joins the
notebook's room (a plain pycrdt client, tests/live/yclient.py) and answers ``ready`` once it
holds the room's state; then ``seen <time>`` when it first holds ``<cells>`` cells (or ``seen
none`` after 120 s), and it leaves the room. ``<time>`` is ``time.perf_counter()``, the
system's monotonic clock on Linux, the same in every process. ``stop`` ends it.

Run by bench_live.py: ``python benchmarks/live_watcher.py <server url> <token>``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.live.yclient import YClient
from tests.support.jupyter_server import RunningServer


class _Server:
    """What YClient asks of a server (its REST API and websocket URLs), for one known by its
    URL and token: RunningServer's own methods, which use nothing else."""

    api = RunningServer.api
    ws_url = RunningServer.ws_url

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token


def serve(url: str, token: str) -> None:
    server: Any = _Server(url, token)
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "stop":
            return
        name, wanted = words[1], int(words[2])
        client = YClient(server, name)
        try:
            print("ready", flush=True)
            seen = client.wait_for(lambda c, n=wanted: len(c.cells_array) == n, 120)
            at = time.perf_counter()
            print(f"seen {at!r}" if seen else "seen none", flush=True)
        finally:
            client.close()


class Watcher:
    """The watcher process, seen from bench_live.py."""

    def __init__(self, url: str, token: str) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, __file__, url, token],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def _say(self, line: str) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.write(line + "\n")
        self._proc.stdin.flush()

    def _hear(self) -> str:
        assert self._proc.stdout is not None
        return self._proc.stdout.readline().strip()

    def watch(self, name: str, cells: int) -> None:
        """Join ``name``'s room and wait for ``cells`` cells; returns once joined."""
        self._say(f"watch {name} {cells}")
        heard = self._hear()
        assert heard == "ready", f"the watcher did not join {name}: {heard!r}"

    def seen(self) -> float:
        """When (``time.perf_counter()``) the watcher first held the cells."""
        heard = self._hear()
        assert heard.startswith("seen ") and heard != "seen none", (
            f"the second client never saw the cells: {heard!r}"
        )
        return float(heard.split()[1])

    def close(self) -> None:
        self._say("stop")
        self._proc.wait(10)


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2])
