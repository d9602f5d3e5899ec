"""Read a command's overlay layer (workspace/overlay.py) into a typed change set, or refuse it.

The upper folder of an overlay holds exactly what the command did to the workspace:

- a regular file, folder or symlink that is new, or replaces what the workspace had at that
  path (a file whose bytes or mode changed is copied up whole);
- a *whiteout* (a character device 0/0) where it deleted a file, folder or symlink;
- an *opaque* folder (``user.overlay.opaque`` or ``trusted.overlay.opaque`` is ``y``) where it
  removed a folder and made a new one with the same name: nothing of the old one shows through.

Compared with the workspace (the lower layer), that gives one `Change` per path: created,
changed (bytes, or what kind of thing it is), deleted, or mode changed; a file whose bytes and
mode are unchanged (``touch``, a rewrite with the same text) is no change. A layer is refused,
as a whole and in one line, when it holds a FIFO, a socket or a device other than a whiteout,
a symlink whose target leads out of the workspace, a hard link to a file outside the layer, a
folder the overlay only *redirects* to, or more than `MAX_ENTRIES` entries or `MAX_BYTES` bytes.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from planbook.errors import LayerRefused
from planbook.workspace.files import kind_name

__all__ = ["MAX_BYTES", "MAX_ENTRIES", "Change", "ChangeSet", "digest_file", "read_layer"]

#: Entries a layer may hold (files, folders, symlinks, whiteouts); past this it is refused.
MAX_ENTRIES = 10_000
#: Bytes of file content a layer may hold.
MAX_BYTES = 1024 * 1024 * 1024

Entry = Literal["file", "folder", "symlink"]
ChangeKind = Literal["created", "changed", "deleted", "mode"]
_OPAQUE = ("user.overlay.opaque", "trusted.overlay.opaque")
_REFUSED_MARKS = ("user.overlay.redirect", "trusted.overlay.redirect", "user.overlay.metacopy")


@dataclass(frozen=True)
class Change:
    """What the command did at one path (relative to the workspace, with forward slashes)."""

    path: str
    kind: ChangeKind
    #: What is there after (for a deletion: what was there before).
    entry: Entry
    #: What was there before, None when nothing was.
    before: Entry | None = None
    mode_before: int | None = None
    mode_after: int | None = None
    #: A symlink's target after the change.
    target: str | None = None
    #: SHA-256 of a file's bytes (a symlink's target) after the change; "" for a deletion.
    digest: str = ""
    size: int = 0

    @property
    def signature(self) -> tuple[str, str, str, int | None]:
        """What a preview and the real run are compared on: paths, content and mode."""
        return (self.kind, self.entry, self.digest, self.mode_after)


@dataclass(frozen=True)
class ChangeSet:
    changes: tuple[Change, ...] = ()
    #: Bytes of file content the layer holds.
    size: int = 0
    #: Entries the layer holds (whiteouts included).
    entries: int = 0
    notes: tuple[str, ...] = field(default=())

    def __bool__(self) -> bool:
        return bool(self.changes)

    def by_path(self) -> dict[str, Change]:
        return {c.path: c for c in self.changes}

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.changes:
            out[c.kind] = out.get(c.kind, 0) + 1
        return out

    def summary(self) -> str:
        """ "2 created, 1 changed" or "no changes"."""
        counts = self.counts()
        order = ("created", "changed", "deleted", "mode")
        words = {"mode": "mode changed"}
        parts = [f"{counts[k]} {words.get(k, k)}" for k in order if counts.get(k)]
        return ", ".join(parts) or "no changes to the workspace"


def digest_file(path: Path | str) -> str:
    h = hashlib.sha256()
    with open(path, "rb", buffering=0) as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _kind_of(mode: int) -> Entry | None:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "folder"
    if stat.S_ISLNK(mode):
        return "symlink"
    return None


class _Reader:
    def __init__(self, root: Path, upper: Path, max_entries: int, max_bytes: int) -> None:
        self.root = root
        self.upper = upper
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.changes: list[Change] = []
        self.entries = 0
        self.size = 0
        #: inode -> (links it has, names of it seen in the layer)
        self.links: dict[int, tuple[int, int, str]] = {}

    def refuse(self, why: str) -> LayerRefused:
        return LayerRefused(f"refused: the command's layer {why}; nothing of it was applied")

    def count(self) -> None:
        self.entries += 1
        if self.entries > self.max_entries:
            raise self.refuse(f"holds more than {self.max_entries:,} entries")

    def walk(self, rel: str, hidden: bool) -> None:
        """The upper folder ``rel`` ("" for the top); ``hidden``: the workspace's folder at
        ``rel`` does not show through (an opaque folder, or one replacing something else)."""
        upper_dir = self.upper / rel if rel else self.upper
        with os.scandir(upper_dir) as it:
            names = sorted(e.name for e in it)
        if hidden:
            lower_dir = self.root / rel if rel else self.root
            if lower_dir.is_dir() and not lower_dir.is_symlink():
                for name in sorted(os.listdir(lower_dir)):
                    if name not in names:
                        self.deleted(f"{rel}/{name}" if rel else name)
        for name in names:
            self.entry(f"{rel}/{name}" if rel else name)

    def lower(self, rel: str) -> os.stat_result | None:
        try:
            return os.lstat(self.root / rel)
        except (FileNotFoundError, NotADirectoryError):
            return None

    def deleted(self, rel: str) -> None:
        """The workspace's entry at ``rel`` is gone (with everything under it)."""
        info = self.lower(rel)
        if info is None:
            return
        kind = _kind_of(info.st_mode) or "file"
        if kind == "folder":
            self.deleted_under(rel)
        self.changes.append(
            Change(rel, "deleted", kind, kind, mode_before=stat.S_IMODE(info.st_mode))
        )

    def deleted_under(self, rel: str) -> None:
        """Everything in the workspace's folder ``rel`` is gone."""
        for name in sorted(os.listdir(self.root / rel)):
            self.count()
            self.deleted(f"{rel}/{name}")

    def entry(self, rel: str) -> None:
        self.count()
        here = self.upper / rel
        info = os.lstat(here)
        mode = info.st_mode
        lower = self.lower(rel)
        before = None if lower is None else _kind_of(lower.st_mode)
        mode_before = None if lower is None else stat.S_IMODE(lower.st_mode)
        if stat.S_ISCHR(mode) and info.st_rdev == 0:
            self.deleted(rel)  # a whiteout
            return
        kind = _kind_of(mode)
        if kind is None:
            raise self.refuse(f"holds {kind_name(mode)} at {rel!r}")
        for mark in _REFUSED_MARKS:
            if _xattr(here, mark) is not None:
                raise self.refuse(f"redirects {rel!r} to another folder ({mark})")
        if lower is not None and before != kind and before == "folder":
            self.deleted_under(rel)  # a folder replaced by a file or symlink
        elif lower is not None and before is None:
            raise self.refuse(f"replaces {kind_name(lower.st_mode)} at {rel!r}")
        if kind == "folder":
            self.folder(rel, info, before, mode_before)
        elif kind == "symlink":
            self.symlink(rel, before, mode_before)
        else:
            self.file(rel, info, before, mode_before, lower)

    def folder(
        self, rel: str, info: os.stat_result, before: Entry | None, mode_before: int | None
    ) -> None:
        mode = stat.S_IMODE(info.st_mode)
        opaque = any(_xattr(self.upper / rel, m) == b"y" for m in _OPAQUE)
        if before != "folder":
            self.changes.append(
                Change(
                    rel,
                    "created" if before is None else "changed",
                    "folder",
                    before,
                    mode_before,
                    mode,
                )
            )
        elif mode != mode_before:
            self.changes.append(Change(rel, "mode", "folder", "folder", mode_before, mode))
        self.walk(rel, hidden=opaque or before != "folder")

    def symlink(self, rel: str, before: Entry | None, mode_before: int | None) -> None:
        target = os.readlink(self.upper / rel)
        lexical = os.path.normpath(os.path.join(self.root, os.path.dirname(rel), target))
        # Followed as far as the workspace's own symlinks lead (the target may not exist yet).
        if not (self.inside(lexical) and self.inside(os.path.realpath(lexical))):
            raise self.refuse(
                f"holds a symlink {rel!r} -> {target!r} that leads out of the workspace"
            )
        if before == "symlink" and os.readlink(self.root / rel) == target:
            return
        digest = hashlib.sha256(os.fsencode(target)).hexdigest()
        kind: ChangeKind = "created" if before is None else "changed"
        self.changes.append(Change(rel, kind, "symlink", before, mode_before, None, target, digest))

    def file(
        self,
        rel: str,
        info: os.stat_result,
        before: Entry | None,
        mode_before: int | None,
        lower: os.stat_result | None,
    ) -> None:
        if info.st_nlink > 1:
            links, seen, first = self.links.get(info.st_ino, (info.st_nlink, 0, rel))
            self.links[info.st_ino] = (links, seen + 1, first)
        self.size += info.st_size
        if self.size > self.max_bytes:
            raise self.refuse(f"holds more than {self.max_bytes:,} bytes")
        mode = stat.S_IMODE(info.st_mode)
        digest = digest_file(self.upper / rel)
        if before is None:
            self.changes.append(
                Change(rel, "created", "file", None, None, mode, None, digest, info.st_size)
            )
            return
        assert lower is not None
        same = (
            before == "file"
            and lower.st_size == info.st_size
            and digest_file(self.root / rel) == digest
        )
        if same and mode == mode_before:
            return
        kind: ChangeKind = "mode" if same else "changed"
        self.changes.append(
            Change(rel, kind, "file", before, mode_before, mode, None, digest, info.st_size)
        )

    def inside(self, path: str) -> bool:
        return path == str(self.root) or path.startswith(str(self.root) + os.sep)

    def check_links(self) -> None:
        for links, seen, first in self.links.values():
            if seen < links:
                raise self.refuse(f"holds {first!r}, a hard link to a file outside the layer")


def _xattr(path: Path, name: str) -> bytes | None:
    try:
        return os.getxattr(path, name, follow_symlinks=False)
    except OSError:
        return None


def read_layer(
    root: Path,
    upper: Path,
    *,
    max_entries: int = MAX_ENTRIES,
    max_bytes: int = MAX_BYTES,
) -> ChangeSet:
    """The changes ``upper`` makes to the workspace at ``root``, or `LayerRefused`."""
    reader = _Reader(root, upper, max_entries, max_bytes)
    reader.walk("", hidden=False)
    reader.check_links()
    changes = sorted(reader.changes, key=lambda c: c.path)
    return ChangeSet(tuple(changes), reader.size, reader.entries)
