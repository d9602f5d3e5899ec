"""Files and shell, confined to one root folder.

Every path is resolved (symlinks included) and must stay inside the root; writes are atomic
(temp file + rename in the same folder); binary and oversized files are refused, not mangled.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from planbook.errors import OutsideWorkspace, UnreadableFile

DEFAULT_MAX_BYTES = 2 * 1024 * 1024
_OUTPUT_LIMIT = 64 * 1024


@dataclass(frozen=True)
class ShellResult:
    command: str
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    seconds: float

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


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

    def resolve(self, path: str) -> Path:
        """The real path of ``path`` inside the root, or `OutsideWorkspace`."""
        if not isinstance(path, str) or not path.strip() or "\x00" in path:
            raise OutsideWorkspace(str(path), str(self.root))
        candidate = Path(path)
        if not candidate.is_absolute():
            candidate = self.root / candidate
        real = candidate.resolve()
        if real != self.root and self.root not in real.parents:
            raise OutsideWorkspace(path, str(self.root))
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
        return real

    def read_bytes(self, path: str) -> bytes | None:
        """The file's bytes, or None when it does not exist."""
        real = self.resolve(path)
        if not real.exists():
            return None
        if real.is_dir():
            raise UnreadableFile(f"{path!r} is a folder, not a file")
        size = real.stat().st_size
        if size > self.max_bytes:
            raise UnreadableFile(
                f"refused: {path!r} is {size:,} bytes, over the {self.max_bytes:,}-byte limit; "
                "raise `max_bytes` in the session's workspace if you really mean it"
            )
        return real.read_bytes()

    def read_text(self, path: str) -> str | None:
        """The file as text, or None when absent; binary files are refused."""
        data = self.read_bytes(path)
        return None if data is None else decode_text(data, path)

    def write_bytes(self, path: str, data: bytes) -> None:
        real = self.check_writable(path)
        if len(data) > self.max_bytes:
            raise UnreadableFile(
                f"refused: the new content of {path!r} is {len(data):,} bytes, over the "
                f"{self.max_bytes:,}-byte limit"
            )
        real.parent.mkdir(parents=True, exist_ok=True)
        mode = real.stat().st_mode & 0o7777 if real.exists() else None
        fd, tmp = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            if mode is not None:
                os.chmod(tmp, mode)
            os.replace(tmp, real)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def delete(self, path: str) -> None:
        self.check_writable(path).unlink(missing_ok=True)

    def run_shell(self, command: str, *, timeout: float, sandboxed: bool = False) -> ShellResult:
        """Run ``command`` with /bin/sh in the root; a timeout kills its whole process group.

        ``sandboxed``: inside the read-only OS sandbox (planbook/sandbox.py; the caller checked
        that one can start), for commands nobody approved. Output is streamed and bounded: a
        sandboxed command is stopped past the cap, an approved step only loses the excess.
        """
        from planbook.sandbox import run_bounded, sandbox_argv

        argv = sandbox_argv(command, self.root) if sandboxed else ["/bin/sh", "-c", command]
        result = run_bounded(
            argv, command=command, cwd=self.root, timeout=timeout, kill_at_cap=sandboxed
        )
        return replace(result, stdout=_bounded(result.stdout), stderr=_bounded(result.stderr))


def decode_text(data: bytes, path: str) -> str:
    if b"\x00" in data[:8192]:
        raise UnreadableFile(f"refused: {path!r} is a binary file; planbook edits text files only")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UnreadableFile(
            f"refused: {path!r} is not UTF-8 text; planbook edits text files only"
        ) from None


def _bounded(text: str) -> str:
    if len(text) > _OUTPUT_LIMIT:
        return text[:_OUTPUT_LIMIT] + f"\n[... {len(text) - _OUTPUT_LIMIT:,} more characters]"
    return text
