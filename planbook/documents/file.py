"""A notebook file on disk, saved atomically after each transaction that changed something.

Reading never writes: an older notebook gets its cell ids in memory and on disk only with the
first change. A save writes what Jupyter's own save would (or the file's own consistent style,
see ``serializer``), re-encoding only what changed. Whether someone else changed the file is
decided by its bytes, compared with the bytes planbook last read or wrote: a copy that keeps
size and modification time (``cp -p``, ``rsync -t``) is still seen.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from planbook.documents.lock import notebook_lock
from planbook.documents.nbnode import NodeNotebook, assign_ids, check_cell_types, normalize
from planbook.documents.serializer import JUPYTER, Encoder, detect
from planbook.documents.trust import KeptTrust
from planbook.errors import MetadataError, UsageMistake


class FileNotebook(NodeNotebook):
    backend = "file"

    def __init__(self, path: str | os.PathLike[str], *, description: str | None = None) -> None:
        self.path = Path(path).resolve()
        self._lock = notebook_lock(self.path)
        data = self._read_bytes()
        nb, self._encoder = self._parse(data)
        self._bytes = data
        self._trust = KeptTrust()
        super().__init__(nb, self._encoder.style)
        self.description = description or f"file: {self.path.name} (saved by planbook on disk)"

    def _read_bytes(self) -> bytes:
        try:
            return self.path.read_bytes()
        except FileNotFoundError:
            raise MetadataError(
                f"notebook {str(self.path)!r} does not exist or was removed; check the path"
            ) from None
        except OSError as exc:
            raise MetadataError(
                f"{self.path.name} cannot be read ({exc.strerror}); fix its permissions or path"
            ) from None

    def _parse(self, data: bytes) -> tuple[dict[str, Any], Encoder]:
        name = self.path.name
        try:
            text = data.decode("utf-8")
            nb = json.loads(text)
        except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError alike
            raise MetadataError(
                f"{name} is not a readable notebook ({type(exc).__name__}: {exc}); "
                "fix the file or pass another one"
            ) from None
        if not isinstance(nb, dict):
            raise MetadataError(f"{name} is not a readable notebook (not a JSON object)")
        if nb.get("nbformat") != 4:
            nb, text = _converted(text, name)
        check_cell_types(nb, name)
        found = detect(text, nb)
        if found is None:
            # Not in one consistent style: the first save writes it as Jupyter would.
            nb, encoder = normalize(nb), Encoder(JUPYTER)
        else:
            encoder = found[1]
        assign_ids(nb)
        return nb, encoder

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Exclusive across processes (an OS lock beside the file, see documents/lock.py) and
        threads; reentrant. Every read compares the file's bytes, so the first read under the
        lock sees what another process saved just before."""
        with self._lock.hold():
            yield

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Read, change and save under the lock, so no other process saves in between."""
        with self.locked(), super().transaction():
            yield

    def _load(self) -> None:
        data = self._read_bytes()
        if data == self._bytes:
            return
        self._nb, self._encoder = self._parse(data)
        self.style = self._encoder.style
        self._bytes = data

    def _commit(self) -> None:
        text = self._encoder.encode(self._nb)
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError as exc:
            bad = exc.object[exc.start : exc.end]
            raise UsageMistake(
                f"refused: the text holds {bad!r}, a lone surrogate that a notebook file "
                "(UTF-8) cannot store; nothing was saved: remove it or write the character it "
                "stands for"
            ) from None
        if data == self._bytes:
            return
        atomic_write(self.path, data)
        self._trust.carry_over(self._bytes, data)
        self._bytes = data


def _converted(text: str, name: str) -> tuple[dict[str, Any], str]:
    """An nbformat 3 (or older) notebook, converted to 4 as Jupyter does when it opens one."""
    # heavy: nbformat (its JSON schema)
    import nbformat

    try:
        node = nbformat.reads(text, as_version=4)
    except Exception as exc:  # nbformat raises several unrelated types for a bad file
        raise MetadataError(
            f"{name} is not a readable notebook ({type(exc).__name__}: {exc}); "
            "fix the file or pass another one"
        ) from None
    text = nbformat.writes(node)
    return normalize(json.loads(text)), text + "\n"


def atomic_write(path: Path, data: bytes) -> None:
    """Write to a temporary file beside ``path``, make it durable, then rename it over."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(FileNotFoundError):  # a new file keeps mkstemp's 0600
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
