"""tests/support/jupyter_server.py: the fixture's server starts even when its port is taken
between picking it and binding it (two test workers start servers and kernels at once), and
does not outlive the test process that started it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.support import jupyter_server
from tests.support.jupyter_server import start_jupyter


def test_a_port_taken_at_the_last_moment_starts_the_server_on_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The port picked first answers as a kernel's ZeroMQ socket does (what CI met: an
    ``http.client.BadStatusLine`` of b"\\xff" in the fixture's first request)."""
    taker = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    taker.bind(("127.0.0.1", 0))
    taker.listen()
    taken = taker.getsockname()[1]
    stop = threading.Event()

    def greet_like_zeromq() -> None:
        taker.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = taker.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(b"\xff" + b"\0" * 8 + b"\x7f")

    thread = threading.Thread(target=greet_like_zeromq, daemon=True)
    thread.start()
    picks = iter([taken])
    real = jupyter_server.free_port
    monkeypatch.setattr(jupyter_server, "free_port", lambda: next(picks, 0) or real())
    try:
        with start_jupyter(tmp_path / "root", lab=False, collaboration=False) as server:
            assert server.port != taken
            assert server.url == f"http://127.0.0.1:{server.port}/"
            assert "version" in server.api("GET", "api")  # Jupyter answers there
    finally:
        stop.set()
        thread.join(5)
        taker.close()


def test_a_server_stops_when_the_test_process_that_started_it_is_killed(tmp_path: Path) -> None:
    """A test run killed from outside (a timeout, a cancelled CI job) leaves no server: one
    left running, its collaboration broken, kept a core busy for an hour."""
    starter = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; "
            "from tests.support.jupyter_server import start_jupyter; "
            "server = start_jupyter(Path(sys.argv[1]), lab=False, collaboration=False); "
            "print(server.pid, flush=True); time.sleep(600)",
            str(tmp_path / "root"),
        ],
        cwd=Path(__file__).parent.parent,
        stdout=subprocess.PIPE,
        text=True,
    )
    pid = 0
    try:
        assert starter.stdout is not None
        pid = int(starter.stdout.readline())
        assert jupyter_server._alive(pid)
        starter.send_signal(signal.SIGKILL)  # no teardown runs
        starter.wait(10)
        deadline = time.monotonic() + 30
        while jupyter_server._alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not jupyter_server._alive(pid), "the server outlived the process that started it"
    finally:
        starter.kill()
        starter.wait(10)
        if pid and jupyter_server._alive(pid):
            os.kill(pid, signal.SIGKILL)
