"""A notebook file on disk, read with nbformat and saved atomically after each transaction.

The file is re-read whenever it changed on disk, so edits made by someone else between two
transactions are seen (and a step whose target they changed becomes a conflict).
"""

from __future__ import annotations

import copy
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import nbformat
from nbformat.v4.rwbase import split_lines, strip_transient

from planbook.documents.lock import notebook_lock
from planbook.documents.nbnode import NodeNotebook, ensure_ids
from planbook.errors import MetadataError


class FileNotebook(NodeNotebook):
    backend = "file"

    def __init__(self, path: str | os.PathLike[str], *, description: str | None = None) -> None:
        self.path = Path(path).resolve()
        self._lock = notebook_lock(self.path)
        self._stamp: tuple[int, int] | None = None
        self._needs_save = False
        self._lock_depth = 0
        super().__init__(self._read())
        self.description = description or f"file: {self.path.name} (saved by planbook on disk)"
        if self._needs_save:
            with self.transaction():
                pass

    def _read(self) -> nbformat.NotebookNode:
        try:
            stat = self.path.stat()
            nb = nbformat.read(self.path, as_version=4)
        except FileNotFoundError:
            raise MetadataError(
                f"notebook {str(self.path)!r} does not exist; check the path or create it first"
            ) from None
        except Exception as exc:  # nbformat raises several unrelated types for a bad file
            raise MetadataError(
                f"{self.path.name} is not a readable notebook ({type(exc).__name__}: {exc}); "
                "fix the file or pass another one"
            ) from None
        self._stamp = (stat.st_mtime_ns, stat.st_size)
        self._needs_save = ensure_ids(nb)
        return nb

    def _load(self) -> None:
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            raise MetadataError(
                f"notebook {str(self.path)!r} was removed; planbook cannot edit it"
            ) from None
        if (stat.st_mtime_ns, stat.st_size) != self._stamp:
            self._nb = self._read()

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Exclusive across processes (an OS lock beside the file) and threads; reentrant."""
        with self._lock.hold():
            if self._lock_depth == 0:
                # Another process may have saved within the same mtime tick and size: the
                # first read under the lock always goes to the file.
                self._stamp = None
            self._lock_depth += 1
            try:
                yield
            finally:
                self._lock_depth -= 1

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Read, change and save under the lock, so no other process saves in between."""
        with self.locked(), super().transaction():
            yield

    def _snapshot(self) -> None:
        # The file on disk is the last committed state: a failed transaction just re-reads it.
        return None

    def _restore(self, saved: object) -> None:
        self._stamp = None
        self._nb = self._read()

    def _commit(self) -> None:
        text = dumps_notebook(self._nb)
        fd, tmp = tempfile.mkstemp(
            dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp"
        )
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            if self.path.exists():
                os.chmod(tmp, self.path.stat().st_mode & 0o7777)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        stat = self.path.stat()
        self._stamp = (stat.st_mtime_ns, stat.st_size)
        self._needs_save = False


_PLANBOOK_SLOT = "\x00planbook-metadata\x00"


def dumps_notebook(nb: nbformat.NotebookNode) -> str:
    """The notebook as nbformat writes it (indent 1, sorted keys, split lines), but without
    copying the whole notebook first, and with planbook's own metadata written compactly: it is
    machine data that grows with every step, and the indented encoder is pure Python."""
    out = nbformat.NotebookNode(nb)
    out["metadata"] = nbformat.NotebookNode(nb.get("metadata", {}))
    out["cells"] = copy.deepcopy(nb.cells)
    planbook = out["metadata"].pop("planbook", None)
    if planbook is not None:
        out["metadata"]["planbook"] = _PLANBOOK_SLOT
    out = strip_transient(split_lines(out))
    text = json.dumps(out, sort_keys=True, indent=1, ensure_ascii=False)
    if planbook is not None:
        compact = json.dumps(planbook, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        text = text.replace(json.dumps(_PLANBOOK_SLOT), compact, 1)
    return text + "\n"
