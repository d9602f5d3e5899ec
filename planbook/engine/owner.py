"""Which process runs a step, and whether that process is still alive.

A step being run carries its runner's token (host, pid and the process's start time, so a
reused pid is not mistaken for the old process). A run cut off by a dead process can then be
settled by anyone, while a step another live process is running is never taken from it.
"""

from __future__ import annotations

import os
import socket
import threading
from functools import cache

_active: set[str] = set()
#: Runners on another host that the person took over (engine/takeover.py): treated as gone.
_given_up: set[str] = set()
_active_mutex = threading.Lock()


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ")".
    fields = data[data.rfind(b")") + 2 :].split()
    return fields[19].decode() if len(fields) > 19 else None


@cache
def _host() -> str:
    return socket.gethostname()


def this_process() -> str:
    """This process's token: ``host:pid:start``."""
    pid = os.getpid()
    return f"{_host()}:{pid}:{_start_time(pid) or '?'}"


def describe(token: str) -> str:
    host, _, rest = token.partition(":")
    pid = rest.partition(":")[0]
    return f"process {pid} on {host}"


def on_this_host(token: str) -> bool:
    return token.partition(":")[0] == _host()


def give_up(token: str) -> None:
    """The person took over from ``token``'s runner: from now on this process treats it as
    gone (the step records no longer name it once settled)."""
    with _active_mutex:
        _given_up.add(token)


def is_alive(token: str | None, step_id: str) -> bool:
    """Whether the process named by ``token`` may still be running step ``step_id``.

    None: nobody (an older planbook, or a step never started). Another host: assumed alive (we
    cannot tell, so we never steal). This process: alive only while a run of it is in progress.
    """
    if token is None:
        return False
    if token == this_process():
        with _active_mutex:
            return step_id in _active
    host, _, rest = token.partition(":")
    if host != _host():
        with _active_mutex:
            return token not in _given_up
    pid_text, _, start = rest.partition(":")
    if not pid_text.isdigit():
        return False
    now = _start_time(int(pid_text))
    return now is not None and (start == "?" or now == start)


class running_here:
    """Marks steps as being run by this process (so they are not settled as cut off)."""

    def __init__(self, step_ids: tuple[str, ...]) -> None:
        self.step_ids = step_ids

    def __enter__(self) -> None:
        with _active_mutex:
            _active.update(self.step_ids)

    def __exit__(self, *exc: object) -> None:
        with _active_mutex:
            _active.difference_update(self.step_ids)
