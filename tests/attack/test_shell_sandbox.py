"""The sandbox itself: what a command inside can see, write, reach and leave behind."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from planbook.workspace.files import Workspace
from planbook.workspace.sandbox import probe

pytestmark = pytest.mark.skipif(not probe().available, reason=probe().reason)


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("hello\n")
    return Workspace(root)


def run(ws: Workspace, command: str, timeout: float = 20) -> tuple[str, str, int | None]:
    result = ws.run_shell(command, timeout=timeout, sandboxed=True)
    return result.stdout, result.stderr, result.returncode


def test_the_workspace_is_read_only_at_its_own_path(ws: Workspace) -> None:
    out, err, _ = run(ws, "pwd; cat a.txt; touch b.txt; echo x >> a.txt; rm a.txt")
    assert out.splitlines()[:2] == [str(ws.root), "hello"]
    assert err.count("Read-only file system") == 3
    assert sorted(p.name for p in ws.root.iterdir()) == ["a.txt"]
    assert (ws.root / "a.txt").read_text() == "hello\n"


def test_nothing_else_of_the_disk_is_visible(ws: Workspace, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("s3cret\n")
    out, err, _ = run(ws, f"cat {tmp_path}/secret.txt ../secret.txt; ls /; ls /root /home")
    assert "s3cret" not in out
    assert "No such file" in err
    assert "home" not in out.split()  # only system directories at the top


def test_tmp_is_private_and_empty(ws: Workspace, tmp_path: Path) -> None:
    marker = Path("/tmp") / f"planbook-marker-{os.getpid()}"
    marker.write_text("host\n")
    try:
        out, _, _ = run(ws, "ls -A /tmp | grep -c planbook-marker; echo x > /tmp/y; cat /tmp/y")
        assert out.split() == ["0", "x"]
        assert not Path("/tmp/y").exists() or Path("/tmp/y").read_text() != "x\n"
    finally:
        marker.unlink()


def test_no_network(ws: Workspace) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    try:
        _, err, code = run(ws, f"curl -sS --max-time 3 http://127.0.0.1:{port}/")
        assert code != 0 and err
        with pytest.raises(TimeoutError):
            listener.accept()
    finally:
        listener.close()


def test_a_clean_environment(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLANBOOK_TEST_SECRET", "tok-123")
    out, _, _ = run(ws, "env")
    assert "tok-123" not in out
    assert "HOME=/tmp" in out


def test_a_timeout_ends_everything_inside(ws: Workspace) -> None:
    # A duration of its own: another run of this suite on the machine sleeps too.
    mark = f"1234.{os.getpid()}"
    start = time.monotonic()
    result = ws.run_shell(f"sleep {mark} & sleep {mark}", timeout=1, sandboxed=True)
    assert result.timed_out and result.returncode is None
    assert time.monotonic() - start < 15
    time.sleep(0.3)
    left = [p for p in Path("/proc").iterdir() if p.name.isdigit() and mark.encode() in _cmdline(p)]
    assert left == []


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""


def test_an_approved_step_keeps_running_past_the_cap(tmp_path: Path) -> None:
    # Approved shell steps run outside the sandbox; their output is bounded, not cut short.
    result = Workspace(tmp_path).run_shell("yes | head -c 3000000; echo done >&2", timeout=30)
    assert result.returncode == 0
    assert "the rest was dropped" in result.stderr and "done" in result.stderr
    assert len(result.stdout) < 70_000
