"""Run the read-only sandbox as the test process or as an unprivileged user (uid 65534).

The kernel treats uid 0 differently in places that matter here (RLIMIT_NPROC does not apply to
it, /proc/sys checks compare with it), so the attacks run both ways where the machine allows:
as root through ``setpriv`` to drop to nobody. The kernel's Python prefix is left out for nobody
when it lies under a folder nobody cannot enter (``/root/.pyenv`` here): bwrap itself runs as
nobody then and could not bind it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from planbook.workspace.files import ShellResult
from planbook.workspace.sandbox import BWRAP_ENV, _filter_fd, run_bounded, sandbox_argv

NOBODY = 65534
SETPRIV = shutil.which("setpriv")


def can_drop_to_nobody() -> str:
    """ "" where the tests can run the sandbox as nobody, else why not."""
    if os.geteuid() != 0:
        return "the tests already run as an ordinary user"
    if SETPRIV is None:
        return "setpriv (util-linux) is not installed"
    done = subprocess.run(
        [SETPRIV, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "true"],
        capture_output=True,
    )
    return "" if done.returncode == 0 else "setpriv cannot drop to nobody here"


def _reachable_by_nobody(path: str) -> bool:
    here = Path(path)
    for parent in [*reversed(here.parents), here]:
        try:
            mode = parent.stat().st_mode
        except OSError:
            return False
        if not mode & 0o001:
            return False
    return True


def run_as_nobody(command: str, workspace: Path, *, timeout: float = 30) -> ShellResult:
    """The sandbox's own command line, started by nobody instead of root (socket filter on)."""
    assert SETPRIV is not None
    with _filter_fd() as fd:
        argv = sandbox_argv(command, workspace, seccomp_fd=fd)
        kept: list[str] = []
        i = 0
        while i < len(argv):
            if argv[i] == "--ro-bind" and not _reachable_by_nobody(argv[i + 1]):
                i += 3
                continue
            kept.append(argv[i])
            i += 1
        drop = [SETPRIV, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        result = run_bounded(
            [*drop, *kept],
            command=command,
            cwd=workspace,
            timeout=timeout,
            env=BWRAP_ENV,
            pass_fds=(fd,),
        )
    assert "bwrap:" not in result.stderr, result.stderr  # the sandbox started
    return result
