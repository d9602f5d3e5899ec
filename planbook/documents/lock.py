"""One holder at a time for a notebook file, across threads and processes.

An OS lock (``fcntl.flock``) on a small file beside the notebook, ``.NAME.ipynb.planbook-lock``.
The notebook itself cannot carry the lock: every save replaces it with a new file (atomic
rename), and a lock on the old inode would protect nothing. The lock file is removed when the
last holder lets go, so a folder shows it only while a transaction is under way.

Removing a lock file is safe only with care: a waiter may have opened the file that the holder
is about to unlink. So the holder unlinks while it still holds the lock, and every process that
obtains a lock checks that its file is still the one at the path; if not, it tries again.

Within one process the lock is reentrant and shared by every document on the same file (a
kernel may hold two sessions on one notebook), and a thread waits for another thread's hold.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from planbook.errors import MetadataError

#: How long a transaction waits for another process before it gives up with a message. Holders
#: never run code under the lock (a step's code runs after "running" is saved), so a wait this
#: long means the other process is stuck.
WAIT_SECONDS = 60.0
_POLL = 0.005


def lock_path(notebook: Path) -> Path:
    return notebook.parent / f".{notebook.name}.planbook-lock"


class NotebookLock:
    """Reentrant across threads of this process, exclusive across processes."""

    def __init__(self, notebook: Path) -> None:
        self.notebook = notebook
        self.path = lock_path(notebook)
        self._mutex = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """Whether some thread of this process holds it now."""
        return self._depth > 0

    @contextmanager
    def hold(self, wait: float | None = None) -> Iterator[None]:
        with self._mutex:
            if self._depth == 0:
                self._fd = self._acquire(WAIT_SECONDS if wait is None else wait)
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._release()

    def _acquire(self, wait: float) -> int:
        deadline = time.monotonic() + wait
        while True:
            fd = self._open()
            try:
                if self._try_lock(fd, deadline) and self._still_current(fd):
                    return fd
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)  # the holder removed this file as it let go: take the new one

    def _open(self) -> int:
        flags = os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        try:
            fd = os.open(self.path, flags, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise MetadataError(
                    f"{self.path.name} beside the notebook is a symlink; planbook will not "
                    "follow it: remove it and try again"
                ) from None
            if exc.errno in (errno.EACCES, errno.EROFS, errno.EPERM):
                raise MetadataError(
                    f"cannot create the lock file {self.path.name} beside {self.notebook.name} "
                    f"({os.strerror(exc.errno)}); planbook needs to write in that folder"
                ) from None
            raise
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise MetadataError(
                f"{self.path.name} beside the notebook is not a regular file; remove it and "
                "try again"
            )
        return fd

    def _try_lock(self, fd: int, deadline: float) -> bool:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise MetadataError(
                        f"another process has held {self.notebook.name} for over "
                        f"{WAIT_SECONDS:g} s; check for a stuck planbook or kernel, then try "
                        "again"
                    ) from None
                time.sleep(_POLL)

    def _still_current(self, fd: int) -> bool:
        try:
            now = os.stat(self.path, follow_symlinks=False)
        except FileNotFoundError:
            return False
        mine = os.fstat(fd)
        return (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino)

    def _release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            # Unlink while still holding: a waiter on this file sees it is gone and retries.
            if self._still_current(fd):
                os.unlink(self.path)
        except OSError:
            pass  # a read-only folder keeps the file: harmless, it is only a lock
        finally:
            os.close(fd)  # closing the last descriptor releases the flock


_registry: dict[Path, NotebookLock] = {}
_registry_mutex = threading.Lock()


def notebook_lock(notebook: Path) -> NotebookLock:
    """The one lock object of this process for ``notebook`` (a resolved path)."""
    with _registry_mutex:
        lock = _registry.get(notebook)
        if lock is None:
            lock = _registry[notebook] = NotebookLock(notebook)
        return lock
