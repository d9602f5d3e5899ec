"""This person's Jupyter notary, read and written with the standard library: the secret a trusted
notebook's signature is an HMAC with, and the database of trusted signatures.

Jupyter's own notary is ``nbformat.sign.NotebookNotary``, and importing it imports the whole of
nbformat, which imports jsonschema, which builds a grammar parser at import (``rfc3987_syntax``,
where it is installed, as Jupyter installs it): 2.4 to 3.2 s of a kernel's first save of a
notebook, measured here, wherever a secret exists (anyone who ever opened Jupyter). planbook
needs two of the notary's questions only (is this signature stored? store this one) and asks
them of the same files in the same way: its data folder's ``notebook_secret`` and
``nbsignatures.db``, the table and index ``SQLiteSignatureStore`` makes, ``sha256``, and the
oldest quarter culled past 65,535 signatures. planbook built ``NotebookNotary()`` with no
configuration before, so those defaults are what it followed then too.

A database that cannot be read (corrupted, locked past the timeout, a read-only folder) trusts
nothing and stores nothing; it is never renamed or replaced here (Jupyter's notary does that
when it next opens it). A save never fails for the notary.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

log = logging.getLogger("planbook")

#: ``NotebookNotary``'s defaults, the ones planbook follows.
ALGORITHM = "sha256"
DIGESTMOD: Callable[..., Any] = hashlib.sha256
#: Signatures kept before the oldest quarter is culled (``SQLiteSignatureStore.cache_size``).
CACHE_SIZE = 65535

_TABLE = """CREATE TABLE IF NOT EXISTS nbsignatures
(
    id integer PRIMARY KEY AUTOINCREMENT,
    algorithm text,
    signature text,
    path text,
    last_seen timestamp
)"""
_INDEX = "CREATE INDEX IF NOT EXISTS algosig ON nbsignatures(algorithm, signature)"


class Notary:
    """The notary of one data folder. ``secret``, ``algorithm`` and ``digestmod`` are what an
    HMAC signer needs (``trust.TreeSigner``); ``check`` and ``store`` ask the database."""

    algorithm = ALGORITHM
    digestmod = staticmethod(DIGESTMOD)

    def __init__(self, folder: Path, secret: bytes) -> None:
        self.db_file = folder / "nbsignatures.db"
        self.secret = secret
        self._db: sqlite3.Connection | None = None
        # the saves of one process come from several threads (the kernel's, a page's, MCP's)
        self._lock = threading.Lock()

    @classmethod
    def of(cls, folder: Path) -> Notary | None:
        """The notary of ``folder``, or None where none was ever set up (no secret file):
        nothing is created then, as nothing is trusted."""
        try:
            secret = (folder / "notebook_secret").read_bytes()
        except FileNotFoundError:
            return None
        return cls(folder, secret)

    def check(self, signature: str) -> bool:
        """Whether ``signature`` is a trusted notebook's (its last use noted, as Jupyter does)."""
        return bool(self._asked(lambda db: self._check(db, signature)))

    def store(self, signature: str) -> None:
        """Note ``signature`` as a trusted notebook's."""
        self._asked(lambda db: self._store(db, signature))

    def _asked(self, question: Callable[[sqlite3.Connection], object]) -> object:
        with self._lock:
            try:
                if self._db is None:
                    self._db = _connected(self.db_file)
                return question(self._db)
            except sqlite3.Error as exc:
                log.warning(
                    "planbook: Jupyter's notebook signatures (%s) could not be used: %s",
                    self.db_file,
                    exc,
                )
                return None

    def _check(self, db: sqlite3.Connection, signature: str) -> bool:
        found = db.execute(
            "SELECT id FROM nbsignatures WHERE algorithm = ? AND signature = ?",
            (self.algorithm, signature),
        ).fetchone()
        if found is None:
            return False
        self._seen(db, signature)
        return True

    def _store(self, db: sqlite3.Connection, signature: str) -> None:
        if not self._check(db, signature):
            db.execute(
                "INSERT INTO nbsignatures (algorithm, signature, last_seen) VALUES (?, ?, ?)",
                (self.algorithm, signature, _now()),
            )
            db.commit()
        (count,) = db.execute("SELECT Count(*) FROM nbsignatures").fetchone()
        if count > CACHE_SIZE:
            db.execute(
                "DELETE FROM nbsignatures WHERE id IN (SELECT id FROM nbsignatures "
                "ORDER BY last_seen DESC LIMIT -1 OFFSET ?)",
                (max(int(0.75 * CACHE_SIZE), 1),),
            )
            db.commit()

    def _seen(self, db: sqlite3.Connection, signature: str) -> None:
        db.execute(
            "UPDATE nbsignatures SET last_seen = ? WHERE algorithm = ? AND signature = ?",
            (_now(), self.algorithm, signature),
        )
        db.commit()


def _connected(db_file: Path) -> sqlite3.Connection:
    db = sqlite3.connect(db_file, check_same_thread=False)  # (used under the notary's lock)
    try:
        db.execute(_TABLE)
        db.execute(_INDEX)
        db.commit()
    except BaseException:
        db.close()
        raise
    return db


def _now() -> str:
    """The time as Jupyter's notary stores it (nbformat registers ``datetime.isoformat`` as
    sqlite3's adapter): the same text, so the cull's ``ORDER BY last_seen`` orders both
    writers' rows alike (a space where nbformat writes a ``T`` would sort them apart)."""
    return datetime.now(UTC).isoformat()
