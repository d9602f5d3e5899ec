"""Run a read-only shell command inside an OS sandbox (bubblewrap on Linux).

The shell classifier only gives an opinion; this module is what makes "read-only" true. A
command runs with ``bwrap``:

- the workspace bound read-only at its own path (and the cwd), nothing else of the disk but the
  system directories (``/usr`` and its ``/bin``, ``/lib*`` links) and a handful of ``/etc`` files
  that programs need to start (dynamic linker cache, ``alternatives`` links, user names);
- the kernel's Python prefix read-only, so ``python --version`` and ``pip list`` describe the
  environment the notebook runs in (it holds installed libraries, no user data);
- a private empty ``/tmp`` (a small tmpfs), ``/proc``, a minimal ``/dev``;
- every namespace unshared (no network, own pids, so killing bwrap ends everything inside),
  ``--die-with-parent``, ``--new-session`` (no terminal to inject keystrokes into);
- a clean environment for bwrap itself too, not only for the command: bwrap is the sandbox's
  pid 1, and ``/proc/1/environ`` shows the environment it was started with;
- ``/proc`` mounted read-only and, as root, every capability dropped: a process whose user is
  root outside may write ``/proc/sys`` (``kernel/core_pattern``) or ``/proc/sysrq-trigger``
  from inside a user namespace, with or without capabilities; no ``/sys`` at all;
- no sockets: a seccomp filter makes ``socket()`` fail (planbook/workspace/seccomp.py), since a
  read-only mount does not stop ``connect()`` to a Unix socket in the workspace;
- one memory and process budget for the whole command (planbook/workspace/budget.py), and a
  per-process memory limit;
- output streamed and capped (past the cap the whole sandbox is killed, so ``cat /dev/zero`` or
  ``yes`` cannot exhaust memory), and a time limit.

Whether a sandbox can start is probed once per process (per bwrap binary); where it cannot (no
bwrap, user namespaces off, macOS, Windows) the caller stages every command instead and shows
the reason.
"""

from __future__ import annotations

import contextlib
import os
import platform
import selectors
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from planbook.workspace.budget import Budget, make_cgroup
from planbook.workspace.seccomp import socket_filter
from planbook.workspace.shell_result import ShellResult

__all__ = [
    "OUTPUT_CAP",
    "SandboxStatus",
    "guarded_argv",
    "probe",
    "run_bounded",
    "run_sandboxed",
    "sandbox_argv",
]

#: Bytes of stdout and stderr together; past this the command is killed.
OUTPUT_CAP = 1024 * 1024
#: Virtual memory for each process (``ulimit -v``, KiB): enough for pip, not for `sort /dev/zero`.
#: The whole command's budget is budget.Budget.
MEMORY_KIB = 2 * 1024 * 1024
#: What bwrap itself is started with (it is pid 1 inside: /proc/1/environ shows this).
BWRAP_ENV: dict[str, str] = {}
#: The private /tmp is RAM: keep it small.
TMP_BYTES = 16 * 1024 * 1024
_ETC_FILES = (
    "alternatives",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "passwd",
    "group",
    "nsswitch.conf",
    "localtime",
    "magic",
    "magic.mime",
)


@dataclass(frozen=True)
class SandboxStatus:
    """Whether commands can run sandboxed here, and if not, why (one line for the person)."""

    available: bool
    reason: str
    bwrap: str | None = None


def find_bwrap() -> str | None:
    return shutil.which("bwrap")


def probe(bwrap: str | None = None) -> SandboxStatus:
    """Can a sandbox start here? Asked once per process for each bwrap binary."""
    if not sys.platform.startswith("linux"):
        return SandboxStatus(
            False,
            f"no OS sandbox on {sys.platform} (planbook uses bubblewrap, Linux only)",
        )
    return _probe(bwrap if bwrap is not None else find_bwrap())


@lru_cache(maxsize=8)
def _probe(bwrap: str | None) -> SandboxStatus:
    if bwrap is None or not Path(bwrap).is_file():
        return SandboxStatus(
            False,
            "no OS sandbox: `bwrap` was not found on PATH (install the `bubblewrap` package)",
        )
    if socket_filter() is None:
        return SandboxStatus(
            False,
            f"no OS sandbox: planbook has no socket filter for this CPU ({platform.machine()})",
            bwrap,
        )
    try:
        with _filter_fd() as fd:
            done = subprocess.run(
                [bwrap, *_mounts(Path("/"), Path("/"), fd), "--", "/bin/sh", "-c", "exit 0"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=20,
                env=BWRAP_ENV,
                pass_fds=(fd,),
            )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return SandboxStatus(False, f"no OS sandbox: bubblewrap cannot start ({exc})", bwrap)
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        why = detail[-1] if detail else f"exit {done.returncode}"
        reason = f"no OS sandbox: bubblewrap cannot start here ({why}; user namespaces off?)"
        return SandboxStatus(False, reason, bwrap)
    return SandboxStatus(True, "commands run in a read-only bubblewrap sandbox", bwrap)


def _python_prefixes() -> list[Path]:
    """Python installs to show inside: the kernel's env and the interpreter it is made from."""
    out: list[Path] = []
    for raw in {sys.prefix, sys.base_prefix, sys.exec_prefix}:
        p = Path(raw).resolve()
        if p != Path("/") and not p.is_relative_to("/usr") and p.is_dir():
            out.append(p)
    return sorted(out)


@contextlib.contextmanager
def _filter_fd() -> Iterator[int]:
    """A pipe's read end holding the seccomp program, for bwrap's ``--seccomp FD``."""
    program = socket_filter()
    if program is None:
        raise OSError(f"no socket filter for this CPU ({platform.machine()})")
    read_end, write_end = os.pipe()
    try:
        # A few dozen bytes: fits the pipe's buffer. Closed once only: in a threaded kernel
        # a second close could hit another thread's new file with the same number.
        try:
            os.write(write_end, program)
        finally:
            os.close(write_end)
        yield read_end
    finally:
        os.close(read_end)


def _mounts(
    workspace: Path, cwd: Path, seccomp_fd: int | None, *, writable: bool = False
) -> list[str]:
    args = [
        "--unshare-all",  # user, ipc, pid, net, uts, cgroup: no network among them
        "--die-with-parent",
        "--new-session",
        "--clearenv",
    ]
    if os.geteuid() == 0 or writable:
        # bwrap keeps a privileged caller's capabilities inside its user namespace (and inside
        # the overlay's user namespace, workspace/overlay.py, every caller is root).
        args += ["--cap-drop", "ALL"]
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    args += ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        link = Path("/") / name
        if link.is_symlink():
            args += ["--symlink", os.readlink(link), str(link)]
        elif link.is_dir():
            args += ["--ro-bind", str(link), str(link)]
    for name in _ETC_FILES:
        if (Path("/etc") / name).exists():
            args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    for prefix in _python_prefixes():
        args += ["--ro-bind", str(prefix), str(prefix)]
    # /proc read-only as a whole: bwrap covers only some of it, and uid 0 outside passes the
    # permission check of /proc/sys files from inside a user namespace.
    args += ["--proc", "/proc", "--remount-ro", "/proc", "--dev", "/dev"]
    args += ["--size", str(TMP_BYTES), "--tmpfs", "/tmp"]
    # After /tmp, so a workspace under /tmp is bound on top of the private tmpfs.
    if workspace != Path("/"):
        # writable: the workspace is an overlay here (workspace/overlay.py), writes land in
        # planbook's layer, never in the workspace itself.
        args += ["--bind" if writable else "--ro-bind", str(workspace), str(workspace)]
    if cwd != workspace and cwd != Path("/"):
        args += ["--ro-bind", str(cwd), str(cwd)]
    args += ["--chdir", str(cwd)]
    path = ":".join([*(str(p / "bin") for p in _python_prefixes()), "/usr/local/bin:/usr/bin:/bin"])
    env = {
        "PATH": path,
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "PAGER": "cat",
        "GIT_PAGER": "cat",
        "GIT_TERMINAL_PROMPT": "0",
        "PIP_NO_INPUT": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    for key, value in env.items():
        args += ["--setenv", key, value]
    return args


def sandbox_argv(
    command: str,
    workspace: str | os.PathLike[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    status: SandboxStatus | None = None,
    seccomp_fd: int | None,
    processes: int = Budget().processes,
    writable: bool = False,
) -> list[str]:
    """The bwrap command line that runs ``command`` with /bin/sh inside the sandbox; bwrap
    reads the socket filter from ``seccomp_fd`` (None: no filter, for tests that show what
    the other walls alone let through). Start it with ``env=BWRAP_ENV``."""
    status = status or probe()
    if not status.available or status.bwrap is None:
        raise RuntimeError(status.reason)
    root = Path(workspace).resolve()
    here = Path(cwd).resolve() if cwd is not None else root
    # Limits set inside, so they bind the command and not bwrap's own setup. RLIMIT_NPROC
    # counts per user namespace and user: inside this fresh one, only the command's processes
    # (bash spells it -u, dash -p).
    inner = (
        f"ulimit -v {MEMORY_KIB} 2>/dev/null; "
        f"ulimit -u {processes} 2>/dev/null || ulimit -p {processes} 2>/dev/null; "
        'exec /bin/sh -c "$1"'
    )
    mounts = _mounts(root, here, seccomp_fd, writable=writable)
    return [status.bwrap, *mounts, "--", "/bin/sh", "-c", inner, "sh", command]


#: Puts itself into the cgroup(s) named before `--`, then becomes the command after it.
_JOIN_CGROUPS = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'


def run_sandboxed(
    command: str,
    workspace: str | os.PathLike[str],
    *,
    timeout: float,
    cwd: str | os.PathLike[str] | None = None,
    budget: Budget | None = None,
    overlay: list[str] | None = None,
) -> ShellResult:
    """Run a read-only ``command`` in the sandbox, within one budget for all its processes
    (a cgroup where one can be made, see planbook/workspace/budget.py). ``overlay``: the
    command line that mounts the workspace as an overlay in a user namespace and then runs
    what follows it (workspace/overlay.py): the workspace is then bound writable, its writes
    landing in the overlay's layer."""
    budget = budget or Budget()
    here = Path(cwd) if cwd is not None else Path(workspace)
    cgroup = make_cgroup(budget)
    try:
        with _filter_fd() as fd:
            argv = sandbox_argv(
                command,
                workspace,
                cwd=here,
                seccomp_fd=fd,
                processes=budget.processes,
                writable=overlay is not None,
            )
            argv = [*(overlay or []), *argv]
            if cgroup is not None:
                argv = ["/bin/sh", "-c", _JOIN_CGROUPS, "sh", *cgroup.procs_files(), "--", *argv]
            result = run_bounded(
                argv, command=command, cwd=here, timeout=timeout, env=BWRAP_ENV, pass_fds=(fd,)
            )
        over = cgroup.verdict() if cgroup is not None else ""
    finally:
        if cgroup is not None:
            cgroup.close()
    if over:
        # In front, like the output cap's line: a later clip of long stderr cannot hide it.
        return replace(result, returncode=None, stderr=f"{over}\n{result.stderr}")
    return result


def guarded_argv(
    command: str, read_only: list[Path], *, status: SandboxStatus | None = None
) -> list[str] | None:
    """The bwrap command line that runs an approved ``command`` as usual (the whole machine,
    network, environment) except that ``read_only`` paths cannot be written, renamed or
    deleted, and nothing it starts outlives it. None where no sandbox can start."""
    status = status or probe()
    if not status.available or status.bwrap is None:
        return None
    args = [
        status.bwrap,
        "--bind",
        "/",
        "/",
        "--dev-bind",
        "/dev",
        "/dev",
        "--unshare-pid",
        "--proc",
        "/proc",
        "--die-with-parent",
    ]
    for path in read_only:
        args += ["--ro-bind", str(path), str(path)]
    return [*args, "--", "/bin/sh", "-c", command]


def run_bounded(
    argv: list[str],
    *,
    command: str,
    cwd: str | os.PathLike[str],
    timeout: float,
    cap: int = OUTPUT_CAP,
    kill_at_cap: bool = True,
    env: dict[str, str] | None = None,
    pass_fds: tuple[int, ...] = (),
) -> ShellResult:
    """Run ``argv`` in its own process group, streaming its output: at most ``cap`` bytes are
    kept; past the cap the process group is killed (or, for a step the person approved, the
    rest is read and dropped); past ``timeout`` seconds it is killed."""
    start = time.monotonic()
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env=env,
        pass_fds=pass_fds,
    )
    try:
        out, err, why = _collect(proc, timeout=timeout, cap=cap, kill_at_cap=kill_at_cap)
    finally:
        _kill(proc)
    stderr = err.decode("utf-8", "replace")
    if why in ("cap", "dropped"):
        stopped = "the command was stopped" if why == "cap" else "the rest was dropped"
        # In front, so a later clip of long stderr cannot hide it.
        stderr = f"[output over {cap:,} bytes: {stopped}]\n" + stderr
    return ShellResult(
        command=command,
        returncode=None if why in ("cap", "time") else proc.returncode,
        stdout=out.decode("utf-8", "replace"),
        stderr=stderr,
        timed_out=why == "time",
        seconds=time.monotonic() - start,
    )


def _collect(
    proc: subprocess.Popen[bytes], *, timeout: float, cap: int, kill_at_cap: bool
) -> tuple[bytes, bytes, str]:
    """Read both pipes until EOF; stop at the cap or the deadline. The third value says why
    it stopped early: "cap", "time", "dropped" (over the cap, read on), or ""."""
    assert proc.stdout is not None and proc.stderr is not None
    chunks: dict[int, list[bytes]] = {1: [], 2: []}
    # Killing: one budget for both streams. Reading on: one each, so an approved step's last
    # error line on stderr survives a flood on stdout.
    used = {1: 0, 2: 0}
    deadline = time.monotonic() + timeout
    why = ""
    dropped = False
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ, 1)
        sel.register(proc.stderr, selectors.EVENT_READ, 2)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                why = "time"
                break
            for key, _ in sel.select(timeout=min(left, 0.5)):
                data = os.read(key.fd, 65536)
                if not data:
                    sel.unregister(key.fileobj)
                    continue
                spent = used[1] + used[2] if kill_at_cap else used[key.data]
                room = max(cap - spent, 0)
                chunks[key.data].append(data[:room])
                used[key.data] += min(len(data), room)
                if len(data) > room:
                    if kill_at_cap:
                        why = "cap"
                        break
                    dropped = True
            if why:
                break
    if not why:
        try:
            proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            why = "time"
    if not why and dropped:
        why = "dropped"
    return b"".join(chunks[1]), b"".join(chunks[2]), why


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """bwrap leads its own process group and is the parent of the sandbox's pid namespace:
    killing the group ends everything inside (--die-with-parent, --unshare-pid)."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
