"""Apply a command's layer to the workspace as one change, and put entries back for rollback.

`prior_state` reads what the workspace holds at every path a change set touches (bytes, mode,
kind, or nothing) so the engine can checkpoint it first; `apply_layer` then removes what the
command removed (deepest first), writes what it created or changed (parents first; each file
through a temporary name and a rename, so no half-written file is ever seen) and sets folder
modes last (a read-only folder would refuse its own children). A file is moved out of the
layer by a rename where both lie on one file system (no copy of big files). `restore_entry`
puts one path back as a checkpoint holds it, for rollback and for an apply that failed half
way.

Every parent folder on the way must be a real folder inside the root (no symlink): the
workspace could have changed between the run and the apply.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
import shutil
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from planbook.errors import LayerRefused
from planbook.workspace.layer import Change, ChangeSet, Entry, digest_file

__all__ = [
    "Prior",
    "apply_layer",
    "entry_hash",
    "hash_after",
    "prior_state",
    "restore_entry",
]

ABSENT = "absent"


@dataclass(frozen=True)
class Prior:
    """One path as the workspace held it before a change set: ``data`` is a file's bytes or a
    symlink's target (None for a folder, or a file over the checkpoint limit: ``too_big``)."""

    path: str
    exists: bool
    entry: Entry | None = None
    mode: int | None = None
    data: bytes | None = None
    too_big: bool = False


def _safe(root: Path, rel: str) -> Path:
    """``root/rel`` with every parent a real folder inside ``root`` (or missing)."""
    path = root / rel
    parent = path.parent
    real = Path(os.path.realpath(parent))
    if real != parent or not (real == root or real.is_relative_to(root)):
        raise LayerRefused(
            f"refused: {rel!r} now lies behind a symlink or outside the workspace; "
            "nothing of the layer was applied"
        )
    return path


def prior_state(root: Path, paths: Iterable[str], max_bytes: int) -> list[Prior]:
    """What each path holds now, in the order given (a change set's: parents first)."""
    out: list[Prior] = []
    for rel in paths:
        path = _safe(root, rel)
        try:
            info = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            out.append(Prior(rel, False))
            continue
        mode = stat.S_IMODE(info.st_mode)
        if stat.S_ISDIR(info.st_mode):
            out.append(Prior(rel, True, "folder", mode))
        elif stat.S_ISLNK(info.st_mode):
            out.append(Prior(rel, True, "symlink", mode, os.fsencode(os.readlink(path))))
        elif stat.S_ISREG(info.st_mode):
            if info.st_size > max_bytes:
                out.append(Prior(rel, True, "file", mode, None, too_big=True))
            else:
                out.append(Prior(rel, True, "file", mode, path.read_bytes()))
        else:
            raise LayerRefused(
                f"refused: the command changed {rel!r}, which is not a file, folder or "
                "symlink; nothing of its layer was applied"
            )
    return out


def _remove(path: Path) -> None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        os.rmdir(path)
    else:
        os.unlink(path)


def _temp_name(path: Path) -> Path:
    return path.with_name(f".{path.name[:200]}.{secrets.token_hex(4)}.planbook")


def _swap_in(tmp: Path, path: Path) -> None:
    """Rename ``tmp`` over ``path`` (an empty folder there is removed first); on failure
    ``tmp`` is removed."""
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            os.rmdir(path)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _put_file(path: Path, source: Path | None, data: bytes | None, mode: int) -> None:
    tmp = _temp_name(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb", closefd=True) as out:
            if source is not None:
                with open(source, "rb") as src:
                    shutil.copyfileobj(src, out, 1 << 20)
            else:
                out.write(data or b"")
            os.fchmod(out.fileno(), mode)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _swap_in(tmp, path)


def _move_file(path: Path, source: Path, mode: int) -> None:
    """Move the layer's file into place (one rename: no copy, nothing left in the layer to
    delete); copied where the layer lies on another file system."""
    if os.path.isdir(path) and not os.path.islink(path):
        os.rmdir(path)
    try:
        os.replace(source, path)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        _put_file(path, source, None, mode)
        return
    os.chmod(path, mode)


def _put_symlink(path: Path, target: str) -> None:
    tmp = _temp_name(path)
    os.symlink(target, tmp)
    _swap_in(tmp, path)


def apply_layer(root: Path, upper: Path, changes: ChangeSet) -> None:
    """Make the workspace what the layer says (see the module's docstring). An OSError may
    leave it half applied: the caller puts the checkpointed paths back."""
    ordered = list(changes.changes)
    for change in sorted(ordered, key=lambda c: c.path.count("/"), reverse=True):
        if change.kind == "deleted" or (
            change.kind == "changed" and change.before not in (None, change.entry)
        ):
            _remove(_safe(root, change.path))
    folder_modes: list[Change] = []
    for change in ordered:
        if change.kind == "deleted":
            continue
        path = _safe(root, change.path)
        if change.entry == "folder":
            with contextlib.suppress(FileExistsError):
                os.mkdir(path, 0o700)
            folder_modes.append(change)
        elif change.entry == "symlink":
            assert change.target is not None
            _put_symlink(path, change.target)
        elif change.kind == "mode":
            os.chmod(path, change.mode_after or 0, follow_symlinks=False)
        else:
            _move_file(path, upper / change.path, change.mode_after or 0)
    for change in sorted(folder_modes, key=lambda c: c.path.count("/"), reverse=True):
        os.chmod(_safe(root, change.path), change.mode_after or 0)


def restore_entry(root: Path, prior: Prior) -> None:
    """Put ``prior.path`` back as ``prior`` holds it (its children are put back first: a
    checkpoint is restored in reverse order, deepest paths first)."""
    path = _safe(root, prior.path) if (root / prior.path).parent.exists() else root / prior.path
    if not prior.exists:
        _remove(path)
        return
    if not path.parent.exists():
        path.parent.mkdir(parents=True, mode=0o700)
        _safe(root, prior.path)
    assert prior.mode is not None
    if prior.entry == "folder":
        if os.path.lexists(path) and not (path.is_dir() and not path.is_symlink()):
            os.unlink(path)
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)
        os.chmod(path, prior.mode)
    elif prior.entry == "symlink":
        _put_symlink(path, os.fsdecode(prior.data or b""))
    else:
        _put_file(path, None, prior.data, prior.mode)


def hash_after(change: Change) -> str:
    """``entry_hash`` of what ``change`` leaves at its path, without reading it again."""
    if change.kind == "deleted":
        return ABSENT
    if change.entry == "folder":
        return hashlib.sha256(f"folder:{change.mode_after or 0:o}".encode()).hexdigest()
    if change.entry == "symlink":
        return hashlib.sha256(b"symlink:" + os.fsencode(change.target or "")).hexdigest()
    return hashlib.sha256(f"file:{change.mode_after or 0:o}:{change.digest}".encode()).hexdigest()


def entry_hash(root: Path, rel: str) -> str:
    """What is at ``rel`` now, as one hash: its kind, mode and bytes (a symlink's target)."""
    path = root / rel
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return ABSENT
    mode = stat.S_IMODE(info.st_mode)
    h = hashlib.sha256()
    if stat.S_ISDIR(info.st_mode):
        h.update(f"folder:{mode:o}".encode())
    elif stat.S_ISLNK(info.st_mode):
        h.update(b"symlink:" + os.fsencode(os.readlink(path)))
    elif stat.S_ISREG(info.st_mode):
        h.update(f"file:{mode:o}:{digest_file(path)}".encode())
    else:
        h.update(f"other:{stat.S_IFMT(info.st_mode)}".encode())
    return h.hexdigest()
