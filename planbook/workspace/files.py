"""Files and shell, confined to one root folder.

Every path is resolved (symlinks included) and must stay inside the root; writes are atomic
(temp file + rename in the same folder); binary and oversized files are refused, not mangled.
Only regular files are read or written: a FIFO, device or socket is refused before it can block
or flood a read, and files are opened folder by folder without following symlinks, so a link
swapped in after the check cannot lead outside the root.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from planbook.errors import OutsideWorkspace, UnreadableFile
from planbook.workspace.overlay import Layer, run_approved
from planbook.workspace.sandbox import guarded_argv, run_bounded, run_sandboxed
from planbook.workspace.settings_guard import SettingsGuard
from planbook.workspace.shell_result import ShellResult

__all__ = [
    "DEFAULT_MAX_BYTES",
    "ShellResult",
    "Workspace",
    "bounded_output",
    "decode_text",
    "kind_name",
]

DEFAULT_MAX_BYTES = 2 * 1024 * 1024
_OUTPUT_LIMIT = 64 * 1024


class Workspace:
    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        protected: tuple[str | os.PathLike[str], ...] = (),
    ) -> None:
        self.root = Path(root).resolve()
        self.max_bytes = max_bytes
        self._protected = {Path(p).resolve() for p in protected}

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    @property
    def protected_paths(self) -> tuple[Path, ...]:
        """Files only cell steps change (the notebook): never written as files."""
        return tuple(sorted(self._protected))

    def resolve(self, path: str) -> Path:
        """The real path of ``path`` inside the root, or `OutsideWorkspace` (or, for a name
        no file can have, `UnreadableFile`). Nothing is opened: see ``read_bytes`` for that."""
        if not isinstance(path, str) or not path.strip() or "\x00" in path:
            raise OutsideWorkspace(str(path), str(self.root))
        _check_lengths(path, self.root)
        candidate = Path(path)
        if not candidate.is_absolute():
            candidate = self.root / candidate
        # os.path.realpath, unlike Path.resolve, stops at a symlink loop instead of raising.
        try:
            real = Path(os.path.realpath(candidate))
        except OSError:  # a link swapped for a file while realpath read it (EINVAL)
            raise UnreadableFile(
                f"refused: {path!r} changed while it was being checked; try again"
            ) from None
        if real != self.root and self.root not in real.parents:
            raise OutsideWorkspace(path, str(self.root))
        if real != self.root and os.path.islink(real):
            raise UnreadableFile(
                f"refused: {path!r} is a symlink that never resolves (a loop); "
                "remove it or name the real file"
            )
        for parent in real.relative_to(self.root).parents:
            if parent.parts and (self.root / parent).exists() and not (self.root / parent).is_dir():
                raise UnreadableFile(
                    f"refused: {path!r} goes through {parent.as_posix()!r}, which is a file, "
                    "not a folder; name a path under a folder"
                )
        return real

    def relative(self, path: str) -> str:
        """The canonical name of a path: relative to the root, with forward slashes."""
        return self.resolve(path).relative_to(self.root).as_posix()

    def check_writable(self, path: str) -> Path:
        real = self.resolve(path)
        if real in self._protected:
            raise UnreadableFile(
                f"refused: {path!r} is the notebook itself; change it with cell steps instead"
            )
        if real == self.root or real.is_dir():
            raise UnreadableFile(f"refused: {path!r} is a folder, not a file")
        try:
            mode = os.lstat(real).st_mode
        except OSError:
            return real  # absent (or unreachable: the write will say why)
        if not stat.S_ISREG(mode):
            raise UnreadableFile(_not_regular(path, mode))
        return real

    def read_bytes(self, path: str) -> bytes | None:
        """The file's bytes, or None when it does not exist. Only regular files are read, never
        through a symlink swapped in since the check, and never more than ``max_bytes``."""
        real = self.resolve(path)
        if real == self.root:
            raise UnreadableFile(f"{path!r} is a folder, not a file")
        try:
            with _folder(self.root, real.parent, path, create=False) as folder:
                if folder is None:
                    return None
                try:
                    fd = os.open(real.name, _READ_FLAGS, dir_fd=folder)
                except FileNotFoundError:
                    return None
                try:
                    info = os.fstat(fd)
                    if stat.S_ISDIR(info.st_mode):
                        raise UnreadableFile(f"{path!r} is a folder, not a file")
                    if not stat.S_ISREG(info.st_mode):
                        raise UnreadableFile(_not_regular(path, info.st_mode))
                    if info.st_size > self.max_bytes:
                        raise self._too_big(path, info.st_size)
                    data = _read_at_most(fd, self.max_bytes + 1)
                finally:
                    os.close(fd)
        except OSError as exc:
            raise UnreadableFile(_os_refusal(path, exc)) from None
        if len(data) > self.max_bytes:  # it grew while we read
            raise self._too_big(path, len(data))
        return data

    def _too_big(self, path: str, size: int) -> UnreadableFile:
        return UnreadableFile(
            f"refused: {path!r} is {size:,} bytes, over the {self.max_bytes:,}-byte limit; "
            "raise `max_bytes` in the session's workspace if you really mean it"
        )

    def read_text(self, path: str) -> str | None:
        """The file as text, or None when absent; binary files are refused."""
        data = self.read_bytes(path)
        return None if data is None else decode_text(data, path)

    def write_bytes(self, path: str, data: bytes) -> None:
        """Replace the file atomically (temp file + rename in its folder). The folders on the
        way are opened one by one without following symlinks, so a folder swapped for a
        symlink since the check is refused, not followed. A new file gets the usual
        permissions (0666 less the umask); an existing one keeps its mode."""
        real = self.check_writable(path)
        if len(data) > self.max_bytes:
            raise UnreadableFile(
                f"refused: the new content of {path!r} is {len(data):,} bytes, over the "
                f"{self.max_bytes:,}-byte limit"
            )
        try:
            with _folder(self.root, real.parent, path, create=True) as folder:
                assert folder is not None
                _replace_in(folder, real.name, data, path)
        except OSError as exc:
            raise UnreadableFile(_os_refusal(path, exc)) from None

    def delete(self, path: str) -> None:
        real = self.check_writable(path)
        try:
            with _folder(self.root, real.parent, path, create=False) as folder:
                if folder is None:
                    return
                try:
                    mode = os.lstat(real.name, dir_fd=folder).st_mode
                except FileNotFoundError:
                    return
                if not stat.S_ISREG(mode):
                    raise UnreadableFile(_not_regular(path, mode))
                os.unlink(real.name, dir_fd=folder)
        except OSError as exc:
            raise UnreadableFile(_os_refusal(path, exc)) from None

    def run_shell(
        self,
        command: str,
        *,
        timeout: float,
        sandboxed: bool = False,
        guard: SettingsGuard | None = None,
        layer: Layer | None = None,
    ) -> ShellResult:
        """Run ``command`` with /bin/sh in the root; a timeout kills its whole process group.

        ``sandboxed``: inside the read-only OS sandbox (planbook/workspace/sandbox.py; the caller
        checked that one can start), for commands nobody approved. ``guard``: a command a
        permission rule let run: protected settings cannot change
        (planbook/workspace/settings_guard.py), and what changed anyway is put back and named
        in ``guarded``. ``layer``: an approved step with the workspace as an overlay whose
        writes land in ``layer`` (workspace/overlay.py; the caller applies it, then puts back
        what ``guard`` protects). Output is streamed and bounded: a
        sandboxed command is stopped past the cap, an approved step only loses the excess.
        """
        if layer is not None:
            return self._run_in_layer(command, timeout, guard, layer)
        if sandboxed:
            result = run_sandboxed(command, self.root, timeout=timeout)
            return replace(
                result, stdout=bounded_output(result.stdout), stderr=bounded_output(result.stderr)
            )
        argv = ["/bin/sh", "-c", command]
        before = guard.snapshot() if guard is not None else None
        held: tuple[str, ...] = ()
        if guard is not None:
            shielded = guarded_argv(command, guard.read_only())
            if shielded is not None:
                argv = shielded
                held = tuple(p.relative_to(self.root).as_posix() for p in guard.read_only())
        result = run_bounded(
            argv, command=command, cwd=self.root, timeout=timeout, kill_at_cap=False
        )
        put_back = tuple(guard.restore(before)) if guard is not None and before else ()
        return replace(
            result,
            stdout=bounded_output(result.stdout),
            stderr=bounded_output(result.stderr),
            guarded=put_back,
            read_only=held,
        )

    def _run_in_layer(
        self, command: str, timeout: float, guard: SettingsGuard | None, layer: Layer
    ) -> ShellResult:
        held = guard.read_only() if guard is not None else []
        result = run_approved(command, self.root, layer, timeout=timeout, read_only=held)
        if result is None:
            raise UnreadableFile("refused: no sandbox can start here, so no overlay either")
        return replace(
            result,
            stdout=bounded_output(result.stdout),
            stderr=bounded_output(result.stderr),
            read_only=tuple(p.relative_to(self.root).as_posix() for p in held),
        )


def decode_text(data: bytes, path: str) -> str:
    if b"\x00" in data[:8192]:
        raise UnreadableFile(f"refused: {path!r} is a binary file; planbook edits text files only")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UnreadableFile(
            f"refused: {path!r} is not UTF-8 text; planbook edits text files only"
        ) from None


def bounded_output(text: str) -> str:
    if len(text) > _OUTPUT_LIMIT:
        return text[:_OUTPUT_LIMIT] + f"\n[... {len(text) - _OUTPUT_LIMIT:,} more characters]"
    return text


_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _check_lengths(path: str, root: Path) -> None:
    try:
        name_max = os.pathconf(root, "PC_NAME_MAX")
        path_max = os.pathconf(root, "PC_PATH_MAX")
    except (OSError, ValueError):
        name_max, path_max = 255, 4096
    longest = max((len(part.encode()) for part in path.split("/")), default=0)
    if longest > name_max:
        raise UnreadableFile(
            f"refused: a name in {path[:60]!r}... is {longest} bytes long, over this file "
            f"system's limit of {name_max}; use a shorter name"
        )
    if len(str(root / path).encode()) >= path_max:
        raise UnreadableFile(
            f"refused: the path {path[:60]!r}... is over this system's limit of {path_max} "
            "bytes; use a shorter path"
        )


def kind_name(mode: int) -> str:
    """What a file of ``mode`` is, in words: "a FIFO (named pipe)", "a socket"..."""
    kinds = {
        stat.S_IFIFO: "a FIFO (named pipe)",
        stat.S_IFCHR: "a character device",
        stat.S_IFBLK: "a block device",
        stat.S_IFSOCK: "a socket",
        stat.S_IFLNK: "a symlink",
        stat.S_IFDIR: "a folder",
    }
    return kinds.get(stat.S_IFMT(mode), "not a regular file")


def _not_regular(path: str, mode: int) -> str:
    kind = kind_name(mode)
    return f"refused: {path!r} is {kind}; planbook reads and writes regular files only"


def _os_refusal(path: str, exc: OSError) -> str:
    """One line for an OSError met while opening folders and files of the workspace."""
    reasons = {
        errno.ELOOP: "a symlink sits on its way (swapped in after the check?) and is not followed",
        errno.ENOTDIR: "a part of it is a file or a symlink, not a folder",
        errno.EISDIR: "it is a folder, not a file",
        errno.ENAMETOOLONG: "the name is too long for this file system",
        errno.EACCES: "permission denied",
        errno.EPERM: "operation not permitted",
        errno.ENOSPC: "no space left on the device",
        errno.EROFS: "the file system is read-only",
        errno.ENXIO: "it is a special file with nothing behind it",
    }
    reason = reasons.get(exc.errno or 0, exc.strerror or type(exc).__name__)
    return f"refused: {path!r}: {reason}; nothing was read or written"


@contextlib.contextmanager
def _folder(root: Path, folder: Path, path: str, *, create: bool) -> Iterator[int | None]:
    """An fd of ``folder`` (inside ``root``), opened one part at a time without following a
    symlink; None when a part is missing and ``create`` is false."""
    fd = os.open(root, _DIR_FLAGS & ~os.O_NOFOLLOW)
    try:
        for part in folder.relative_to(root).parts:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    yield None
                    return
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _replace_in(folder: int, name: str, data: bytes, path: str) -> None:
    try:
        old = os.lstat(name, dir_fd=folder)
    except FileNotFoundError:
        old = None
    if old is not None and not stat.S_ISREG(old.st_mode):
        raise UnreadableFile(_not_regular(path, old.st_mode))
    tmp = f".{name[:200]}.{secrets.token_hex(4)}.tmp"
    # 0o666 is narrowed by the umask, as for any new file; an existing file's mode is kept.
    fd = os.open(
        tmp,
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
        0o666,
        dir_fd=folder,
    )
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if old is not None:
                os.fchmod(fd, stat.S_IMODE(old.st_mode))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=folder)
        raise
