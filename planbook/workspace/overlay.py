"""Run a shell command with the workspace as the lower layer of an overlay, its writes landing in
a layer folder planbook owns (read by workspace/layer.py, applied by workspace/layer_apply.py).

How: ``unshare --user --map-root-user --mount`` gives the command a user and mount namespace of
its own, where ``mount -t overlay`` is allowed (Linux 5.11+ for unprivileged overlays); the
overlay is mounted over the workspace's own path (lower: the workspace, upper and work: a fresh
folder under the system's temp folder), so the command sees the workspace where it always is and
every write, rename, delete or chmod lands in the upper folder. ``userxattr`` keeps the overlay's
own marks in ``user.overlay.*`` attributes, which an unprivileged overlay may write (without it
removing a folder fails with EIO). Then:

- a *preview* runs inside the usual read-only sandbox (workspace/sandbox.py: no network, seccomp,
  one budget, output and time limits) except that the workspace is bound writable: it is the
  overlay, so the writes still never reach the workspace;
- an *approved* run gets the machine as an approved step always did (network, home, the kernel's
  environment), its own pid namespace (nothing it starts outlives it) and its own user namespace
  mapped back to the real user id, so ``id -u`` says what it says outside.

Why not bubblewrap alone: Debian 12's bubblewrap 0.8.0 has no ``--overlay`` (0.11 has); why not
fuse-overlayfs: the kernel's overlay needs no extra package and no FUSE device, and works here
(measured, docs/FIELD-NOTES); where it cannot start the probe says why and shell steps run as
before.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from planbook.workspace.sandbox import guarded_argv, run_bounded, run_sandboxed
from planbook.workspace.shell_result import ShellResult

__all__ = [
    "Layer",
    "OverlayStatus",
    "layer",
    "make_layer",
    "overlay_probe",
    "remove_layer",
    "run_approved",
    "run_preview",
    "usable_for",
]

#: Mounts the overlay over the workspace ($1) with upper $2 and work $3, then becomes the rest.
_MOUNT = (
    "set -e; "
    'mount -t overlay overlay -o "userxattr,lowerdir=$1,upperdir=$2,workdir=$3" "$1"; '
    'shift 3; exec "$@"'
)
#: Characters mount(8)'s option list cannot carry in a folder name.
_UNSAFE_IN_OPTIONS = frozenset(",:\\\n")


@dataclass(frozen=True)
class OverlayStatus:
    """Whether shell steps can run in an overlay here, and if not, why (one line)."""

    available: bool
    reason: str


@dataclass(frozen=True)
class Layer:
    """A command's layer: ``upper`` holds what it wrote (whiteouts for deletions)."""

    root: Path
    upper: Path
    work: Path


def overlay_probe() -> OverlayStatus:
    """Can an overlay be mounted here? Asked once per process."""
    if not sys.platform.startswith("linux"):
        return OverlayStatus(False, f"no overlays on {sys.platform} (Linux only)")
    return _probe(shutil.which("unshare"))


@lru_cache(maxsize=4)
def _probe(unshare: str | None) -> OverlayStatus:
    if unshare is None:
        return OverlayStatus(False, "no overlays: `unshare` (util-linux) was not found on PATH")
    release = os.uname().release
    try:
        major, minor = (int(x) for x in release.split(".")[:2])
    except ValueError:
        major, minor = 0, 0
    if (major, minor) < (5, 11):
        return OverlayStatus(
            False, f"no overlays: Linux {release} is older than 5.11 (no unprivileged overlayfs)"
        )
    with tempfile.TemporaryDirectory(prefix="planbook-probe-") as tmp:
        lower = Path(tmp, "lower")
        (lower / "gone").mkdir(parents=True)
        (lower / "gone" / "file").write_bytes(b"x")
        with layer(lower) as lay:
            script = "rm -r gone && echo y > new"
            try:
                done = subprocess.run(
                    [*mount_argv(lower, lay), "/bin/sh", "-c", f"cd {lower} && {script}"],
                    capture_output=True,
                    timeout=20,
                    stdin=subprocess.DEVNULL,
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                return OverlayStatus(False, f"no overlays: the probe could not start ({exc})")
            if done.returncode != 0:
                lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
                why = lines[-1] if lines else f"exit {done.returncode}"
                return OverlayStatus(
                    False, f"no overlays: {why} (user namespaces off, or no overlayfs?)"
                )
            if not (lay.upper / "new").is_file() or not (lay.upper / "gone").exists():
                return OverlayStatus(
                    False, "no overlays: the probe's writes did not reach its layer"
                )
    return OverlayStatus(True, "shell steps run in an overlay: previews and rollback are on")


def usable_for(root: Path) -> str:
    """Why this workspace cannot be an overlay's lower layer, or "" when it can."""
    if any(ch in _UNSAFE_IN_OPTIONS for ch in str(root)):
        return f"no overlays for {root}: its path holds a `,`, `:` or `\\` mount cannot pass"
    return ""


def make_layer(workspace: Path) -> Layer:
    """A fresh layer folder (upper + work) under the system's temp folder, or beside the
    workspace when the temp folder is inside it (a layer cannot lie inside its lower layer)."""
    home = Path(tempfile.gettempdir()).resolve()
    if home.is_relative_to(workspace):
        home = workspace.parent
    root = Path(tempfile.mkdtemp(prefix=".planbook-layer-", dir=home))
    lay = Layer(root, root / "upper", root / "work")
    lay.upper.mkdir()
    lay.work.mkdir()
    return lay


def remove_layer(lay: Layer) -> None:
    """Remove a layer folder whatever it holds."""
    # The overlay's work folder can hold a folder only root-in-namespace may enter. A symlink
    # the command left is listed among the folders too: chmod would follow it, out of the layer.
    for dirpath, dirnames, _ in os.walk(lay.root):
        for name in dirnames:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                with contextlib.suppress(OSError):
                    os.chmod(path, 0o700)
    shutil.rmtree(lay.root, ignore_errors=True)


@contextlib.contextmanager
def layer(workspace: Path) -> Iterator[Layer]:
    """A fresh layer folder for ``workspace``, removed afterwards."""
    lay = make_layer(workspace)
    try:
        yield lay
    finally:
        remove_layer(lay)


def mount_argv(root: Path, lay: Layer) -> list[str]:
    """The command line prefix that mounts ``root`` as an overlay in a new user and mount
    namespace, then runs whatever follows it."""
    return [
        "unshare",
        "--user",
        "--map-root-user",
        "--mount",
        "/bin/sh",
        "-c",
        _MOUNT,
        "sh",
        str(root),
        str(lay.upper),
        str(lay.work),
    ]


def run_preview(command: str, root: Path, lay: Layer, *, timeout: float) -> ShellResult:
    """Run ``command`` once in the read-only sandbox with ``root`` as an overlay: its writes
    land in ``lay`` only (no network, the sandbox's limits and budget)."""
    return run_sandboxed(command, root, timeout=timeout, overlay=mount_argv(root, lay))


def run_approved(
    command: str, root: Path, lay: Layer, *, timeout: float, read_only: Sequence[Path] = ()
) -> ShellResult | None:
    """Run an approved ``command`` as approved steps run (network, the kernel's environment),
    with ``root`` as an overlay whose writes land in ``lay``; ``read_only`` paths bound
    read-only over the overlay. None where no sandbox can start (bubblewrap is needed to map
    the user back and to end what the command leaves running)."""
    guarded = guarded_argv(command, list(read_only))
    if guarded is None:
        return None
    # The user mapped back (the overlay's namespace made it root) and the command's folder.
    mapped = ["--unshare-user", "--uid", str(os.getuid()), "--gid", str(os.getgid())]
    inner = [guarded[0], *mapped, "--chdir", str(root), *guarded[1:]]
    return run_bounded(
        [*mount_argv(root, lay), *inner],
        command=command,
        cwd=root,
        timeout=timeout,
        kill_at_cap=False,
    )
