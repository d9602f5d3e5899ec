"""Fixtures of the live suite: one JupyterLab server with jupyter-collaboration per module, a
fresh notebook per test, kernels through the REST API (what the frontend does)."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from planbook.documents.live.document import LiveNotebook, open_live
from tests.live.yclient import YClient
from tests.support.jupyter_server import RunningServer, start_jupyter

_names = itertools.count(1)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with start_jupyter(tmp_path_factory.mktemp("live-root")) as running:
        yield running


@pytest.fixture
def notebook(server: RunningServer) -> str:
    """A notebook of three code cells (ids c1, c2, c3), relative to the server root."""
    name = f"nb{next(_names)}.ipynb"
    path = server.write_notebook(name, ["import math", "x = 1", "print(x + 1)"])
    nb = json.loads(path.read_text())
    for i, cell in enumerate(nb["cells"], 1):
        cell["id"] = f"c{i}"
    path.write_text(json.dumps(nb))
    return name


@pytest.fixture
def live(server: RunningServer, notebook: str) -> Iterator[LiveNotebook]:
    doc = open_live(server.url, server.token, notebook)
    yield doc
    doc.close()


@pytest.fixture
def other(server: RunningServer, notebook: str) -> Iterator[YClient]:
    """The other person in the room: a plain pycrdt client."""
    client = YClient(server, notebook)
    yield client
    client.close()


@pytest.fixture
def kernel(server: RunningServer, notebook: str) -> Iterator[dict[str, Any]]:
    """A kernel session for the notebook, as JupyterLab creates it when the notebook opens."""
    session = server.create_session(notebook)
    yield session
    server.api("DELETE", f"api/sessions/{session['id']}")


def on_disk(server: RunningServer, notebook: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((Path(server.root) / notebook).read_text())
    return data


def read_after_restart(path: Path) -> Path:
    """The file a server started again loads for the notebook at ``path``. A server killed
    while it wrote the notebook leaves it cut short, and beside it the copy its atomic write
    set aside first (``.~name``); when the notebook does not parse, a restarted server moves
    it aside and loads that copy (jupyter_server's ``_read_notebook``). A server told to stop
    is killed too here: with a client in a room, jupyter-collaboration never finishes
    stopping (``RunningServer.stop``)."""
    aside = path.with_name(f".~{path.name}")
    if aside.exists():
        try:
            json.loads(path.read_bytes())
        except ValueError:
            return aside
    return path


def run(server: RunningServer, kernel: dict[str, Any], code: str) -> str:
    """Run code in the kernel; fail with the traceback if it raised; return its stdout."""
    result = server.execute(kernel["kernel"]["id"], code, timeout=120)
    if result["error"]:
        raise AssertionError("\n".join(result["error"]["traceback"]))
    return str(result["stdout"])


def disk_sources(nb: dict[str, Any]) -> list[str]:
    return ["".join(c["source"]) for c in nb["cells"]]


def waited(done: Callable[[], bool], seconds: float = 60.0, every: float = 0.005) -> bool:
    """Poll ``done`` until it holds (True) or ``seconds`` pass (False). Polled, not waited on
    the room's condition: it looks at counters and flags only (no read of the copy, which
    waits while a reload is under way), and a reload's window is seen within ``every``."""
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() >= deadline:
            return False
        time.sleep(every)
    return True
