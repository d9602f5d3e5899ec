"""One memory and process budget for a whole sandboxed command, kept by the kernel.

A per-process limit (``ulimit -v``) lets a pipeline of N programs use N times it; the budget
here is for the command as a whole. Where this process may make a cgroup (a cgroup v2 subtree
delegated to it, or cgroup v1 ``memory`` and ``pids`` hierarchies it can write, as root in many
containers), each command gets a fresh child of this process's own cgroup (so it stays inside
every limit already put on the kernel) with ``memory.max`` and ``pids.max``; the kernel stops a
process that goes over (the OOM killer inside that cgroup only; fork fails with EAGAIN), and the
cgroup's event counters say which budget was hit. Where no cgroup can be made, the sandbox
falls back to ``RLIMIT_NPROC`` inside its own user namespace (counted per namespace and user, so
only the command's processes; the kernel does not apply it to uid 0) and the per-process memory
limit: docs/permissions.md says what that leaves open.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Budget", "CommandCgroup", "make_cgroup"]

_names = itertools.count()


@dataclass(frozen=True)
class Budget:
    """What one command may use in all: resident memory (bytes) and live processes."""

    memory: int = 1024 * 1024 * 1024
    processes: int = 64


@dataclass
class CommandCgroup:
    """The cgroup(s) made for one command: one directory on cgroup v2, two on v1."""

    budget: Budget
    memory_dir: Path
    pids_dir: Path
    version: int

    def procs_files(self) -> list[str]:
        dirs = dict.fromkeys([self.memory_dir, self.pids_dir])
        return [str(d / "cgroup.procs") for d in dirs]

    def verdict(self) -> str:
        """One line for the person if a budget was hit, else ""."""
        mem_events = "memory.events" if self.version == 2 else "memory.oom_control"
        if _counter(self.memory_dir / mem_events, "oom_kill") > 0:
            mib = self.budget.memory // (1024 * 1024)
            return (
                f"[the command exceeded its memory budget ({mib:,} MiB for all its processes "
                "together): the sandbox stopped it]"
            )
        if _counter(self.pids_dir / "pids.events", "max") > 0:
            return (
                f"[the command exceeded its budget of {self.budget.processes} processes: "
                "the sandbox refused to start more]"
            )
        return ""

    def close(self) -> None:
        """Kill whatever is left inside and remove the directories."""
        for directory in dict.fromkeys([self.memory_dir, self.pids_dir]):
            deadline = time.monotonic() + 5
            while True:
                for pid in _pids(directory):
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.02)


def make_cgroup(budget: Budget) -> CommandCgroup | None:
    """A fresh cgroup holding ``budget`` for one command, or None where none can be made."""
    own = _own_cgroups()
    mounts = _cgroup_mounts()
    if "" in own and "" in mounts:
        made = _make_v2(mounts[""] / own[""].lstrip("/"), budget)
        if made is not None:
            return made
    if "memory" in own and "pids" in own and "memory" in mounts and "pids" in mounts:
        return _make_v1(
            mounts["memory"] / own["memory"].lstrip("/"),
            mounts["pids"] / own["pids"].lstrip("/"),
            budget,
        )
    return None


def _name() -> str:
    return f"planbook-{os.getpid()}-{next(_names)}"


def _make_v2(parent: Path, budget: Budget) -> CommandCgroup | None:
    child = parent / _name()
    try:
        child.mkdir()
    except OSError:
        return None
    try:
        wanted = {"memory", "pids"}
        if not wanted <= set(_read(child / "cgroup.controllers").split()):
            # Works where this process may hand the controllers down (a delegated subtree root,
            # or a container's own cgroup namespace root); elsewhere the kernel says no.
            (parent / "cgroup.subtree_control").write_text("+memory +pids")
            if not wanted <= set(_read(child / "cgroup.controllers").split()):
                raise OSError("memory and pids controllers not available")
        (child / "memory.max").write_text(str(budget.memory))
        with contextlib.suppress(OSError):
            (child / "memory.swap.max").write_text("0")
        (child / "pids.max").write_text(str(budget.processes))
    except OSError:
        with contextlib.suppress(OSError):
            child.rmdir()
        return None
    return CommandCgroup(budget, child, child, 2)


def _make_v1(memory_parent: Path, pids_parent: Path, budget: Budget) -> CommandCgroup | None:
    name = _name()
    made: list[Path] = []
    try:
        for parent in (memory_parent, pids_parent):
            (parent / name).mkdir()
            made.append(parent / name)
        memory, pids = made
        (memory / "memory.limit_in_bytes").write_text(str(budget.memory))
        with contextlib.suppress(OSError):  # only with swap accounting on
            (memory / "memory.memsw.limit_in_bytes").write_text(str(budget.memory))
        (pids / "pids.max").write_text(str(budget.processes))
    except OSError:
        for directory in made:
            with contextlib.suppress(OSError):
                directory.rmdir()
        return None
    return CommandCgroup(budget, memory, pids, 1)


def _own_cgroups() -> dict[str, str]:
    """This process's cgroup per controller ("" for the v2 hierarchy)."""
    out: dict[str, str] = {}
    for line in _read(Path("/proc/self/cgroup")).splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            out[name] = path
    return out


def _cgroup_mounts() -> dict[str, Path]:
    """Where each hierarchy is mounted, seen from its root ("" for v2); the mount must show
    the hierarchy from its top (``/`` root), as ``/proc/self/cgroup`` paths are from there."""
    out: dict[str, Path] = {}
    for line in _read(Path("/proc/self/mountinfo")).splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3 or fields[3] != "/":
            continue
        mountpoint = Path(fields[4].replace("\\040", " "))
        if tail[0] == "cgroup2":
            out.setdefault("", mountpoint)
        elif tail[0] == "cgroup":
            for option in tail[2].split(","):
                if option in ("memory", "pids"):
                    out.setdefault(option, mountpoint)
    return out


def _counter(path: Path, key: str) -> int:
    for line in _read(path).splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return 0


def _pids(directory: Path) -> list[int]:
    return [int(p) for p in _read(directory / "cgroup.procs").split() if p.isdigit()]


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
