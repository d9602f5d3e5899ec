"""What the read-only sandbox must not leak: the kernel's environment, a door through a socket,
a write to the host kernel's settings. Each attack runs for real in bubblewrap, as the test
process's user and, where the machine allows, as an unprivileged user too."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from planbook.workspace.files import Workspace
from planbook.workspace.sandbox import BWRAP_ENV, probe, run_bounded, sandbox_argv
from tests.attack.sandbox_users import can_drop_to_nobody, run_as_nobody
from tests.support.listeners import CountingListener

pytestmark = pytest.mark.skipif(not probe().available, reason=probe().reason)
NOBODY_WHY = can_drop_to_nobody()
as_nobody = pytest.mark.skipif(bool(NOBODY_WHY), reason=NOBODY_WHY or "-")

SECRET = "sk-test-9d2c41f0b7e6a5"
ENV_ATTACKS = [
    "cat /proc/1/environ",
    "cat /proc/self/environ",
    "cat /proc/*/environ",
    "tr '\\0' '\\n' < /proc/1/environ",
    "env",
    "ps e -ww -A",
    "ps eww 1",
    "grep -a -r sk-test /proc/1/ 2>/dev/null",
    "strings /proc/1/environ",
    "cat /proc/self/task/*/environ /proc/1/task/*/environ",
]


@pytest.fixture
def ws() -> Iterator[Path]:
    # Not under pytest's 0700 tmp folder: nobody must reach it too.
    root = Path(tempfile.mkdtemp(prefix="planbook-leaks-", dir="/tmp"))
    root.chmod(0o755)
    (root / "a.txt").write_text("hello\n")
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _run(ws: Path, command: str) -> tuple[str, str]:
    result = Workspace(ws).run_shell(command, timeout=30, sandboxed=True)
    assert "bwrap:" not in result.stderr  # the sandbox started: the attack really ran
    return result.stdout, result.stderr


@pytest.mark.parametrize("command", ENV_ATTACKS)
def test_the_kernels_environment_never_reaches_the_sandbox(
    ws: Path, command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    out, err = _run(ws, command)
    assert SECRET not in out + err
    assert "OPENAI_API_KEY" not in out + err
    if command == "env":
        assert "HOME=/tmp" in out  # the command's own clean environment is still there


@as_nobody
@pytest.mark.parametrize("command", ENV_ATTACKS[:5])
def test_the_environment_stays_out_as_an_ordinary_user(
    ws: Path, command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    result = run_as_nobody(command, ws)
    assert SECRET not in result.stdout + result.stderr


def test_read_only_commands_still_read(ws: Path) -> None:
    (ws / "b.txt").write_text("alpha\nbeta\n")
    out, err = _run(ws, "ls; cat a.txt; grep -n beta b.txt; head -1 b.txt; ls -l a.txt")
    assert out.splitlines()[:5] == ["a.txt", "b.txt", "hello", "2:beta", "alpha"]
    assert "a.txt" in out.splitlines()[5] and err == ""


def UnixListener(address: str | bytes) -> CountingListener:
    """A real AF_UNIX listener (a path in the workspace, or an abstract name) that counts."""
    return CountingListener(socket.AF_UNIX, address, greeting=b"door-open\n")


def _socket_attacks(path: str, abstract: str) -> list[str]:
    attacks = [
        f'python3 -c \'import socket; s=socket.socket(socket.AF_UNIX); s.connect("{path}"); '
        "print(s.recv(99))'",
        f'python3 -c \'import socket; s=socket.socket(socket.AF_UNIX); s.connect("\\0{abstract}");'
        " print(s.recv(99))'",
        f"python3 -c 'import socket; s=socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); "
        f's.sendto(b"x", "{path}")\'',
        "python3 -c 'import socket; s=socket.socket(socket.AF_INET); "
        's.connect(("127.0.0.1", 9))\'',
        f"curl -sS --max-time 3 --unix-socket {path} http://x/",
        f"curl -sS --max-time 3 --abstract-unix-socket {abstract} http://x/",
        f"cat {path}",
        f"cat < {path}",
    ]
    for tool in ("nc", "socat"):
        if shutil.which(tool):
            attacks.append(
                f"{tool} -U {path} </dev/null" if tool == "nc" else f"socat - UNIX:{path}"
            )
    return attacks


@pytest.fixture
def listeners(ws: Path) -> Iterator[tuple[CountingListener, CountingListener, str, str]]:
    path = str(ws / "db.sock")
    abstract = f"planbook-test-{os.getpid()}"
    by_path, by_name = UnixListener(path), UnixListener(b"\0" + abstract.encode())
    yield by_path, by_name, path, abstract
    by_path.close()
    by_name.close()


def test_no_socket_outside_the_sandbox_can_be_reached(
    ws: Path, listeners: tuple[CountingListener, CountingListener, str, str]
) -> None:
    by_path, by_name, path, abstract = listeners
    attacks = _socket_attacks(path, abstract)
    for command in attacks:
        out, _ = _run(ws, command)
        assert "door-open" not in out, command
    assert (by_path.count, by_name.count) == (0, 0)
    # The listener itself works: the host can connect.
    probe_sock = socket.socket(socket.AF_UNIX)
    probe_sock.connect(path)
    probe_sock.close()


@as_nobody
def test_no_socket_can_be_reached_as_an_ordinary_user(
    ws: Path, listeners: tuple[CountingListener, CountingListener, str, str]
) -> None:
    by_path, by_name, path, abstract = listeners
    os.chmod(path, 0o777)  # so only the sandbox, not file modes, can keep nobody out
    for command in _socket_attacks(path, abstract):
        result = run_as_nobody(command, ws)
        assert "door-open" not in result.stdout, command
    assert (by_path.count, by_name.count) == (0, 0)


def test_the_socket_filter_is_what_keeps_a_workspace_socket_closed(
    ws: Path, listeners: tuple[CountingListener, CountingListener, str, str]
) -> None:
    """Without the seccomp filter, the other walls alone: the network namespace hides the
    abstract socket, the read-only bind does not stop a connect to the workspace's socket."""
    by_path, by_name, path, abstract = listeners
    (ws / "connect.py").write_text(
        "import socket, sys\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "s.connect(sys.argv[1].replace('@', chr(0)))\n"
        "print(s.recv(99))\n"
    )
    for address in (path, "@" + abstract):
        argv = sandbox_argv(f"python3 connect.py {address}", ws, seccomp_fd=None)
        run_bounded(argv, command="connect", cwd=ws, timeout=30, env=BWRAP_ENV)
    assert by_path.count == 1  # the door the filter closes
    assert by_name.count == 0  # already closed by --unshare-net


KERNEL_WRITES = [
    ("/proc/sys/kernel/core_pattern", "core.planbook-test"),
    ("/proc/sys/kernel/hostname", "planbook-test"),
    ("/proc/sys/vm/drop_caches", "1"),
    ("/proc/sys/kernel/printk_ratelimit_burst", "11"),
    ("/proc/sys/fs/binfmt_misc/register", ":pb:E::pbx::/bin/true:"),
    ("/proc/sysrq-trigger", "h"),
    ("/sys/kernel/mm/transparent_hugepage/enabled", "never"),
    ("/sys/fs/cgroup/pids/pids.max", "1"),
    ("/proc/self/oom_score_adj", "-1000"),
]


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text()
    except OSError:
        return None


@pytest.mark.parametrize(("path", "value"), KERNEL_WRITES)
def test_kernel_interfaces_are_read_only_inside(ws: Path, path: str, value: str) -> None:
    before = _read(path) if not path.startswith("/proc/self") else None
    try:
        for attack in (f"echo '{value}' > {path}", f"printf '%s' '{value}' | tee {path}"):
            _, err = _run(ws, attack)
            assert err, attack  # the shell or tee says why it could not write
        if before is not None:
            assert _read(path) == before
    finally:
        if path == "/proc/sys/kernel/core_pattern" and before and _read(path) != before:
            Path(path).write_text(before)  # never leave a changed core_pattern behind


@as_nobody
def test_kernel_interfaces_are_read_only_as_an_ordinary_user(ws: Path) -> None:
    before = _read("/proc/sys/kernel/core_pattern")
    result = run_as_nobody("echo core.planbook-test > /proc/sys/kernel/core_pattern", ws)
    assert "Read-only file system" in result.stderr
    assert _read("/proc/sys/kernel/core_pattern") == before


def test_no_capabilities_and_a_filter_inside(ws: Path) -> None:
    out, _ = _run(ws, "grep -E '^(CapEff|CapBnd|Seccomp):' /proc/self/status")
    fields = dict(line.split(":\t") for line in out.splitlines())
    assert fields == {"CapEff": "0000000000000000", "CapBnd": "0000000000000000", "Seccomp": "2"}


def test_ps_inside_sees_only_the_sandbox(ws: Path) -> None:
    out, _ = _run(ws, "ps -A -o pid=,comm=")
    names = {line.split()[1] for line in out.splitlines()}
    assert names <= {"bwrap", "sh", "ps"}, names
    assert subprocess.run(["true"]).returncode == 0
