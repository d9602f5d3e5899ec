"""Signatures on what this person recorded on this machine: the notebook's authority.

A notebook's planbook metadata holds approvals, answers to the agent's questions, the mode and
checkpoints, and anyone who had the file may have written them. As Jupyter signs the notebooks
a person trusts with a secret kept in their data folder (``notebook_secret``), planbook signs
each record that carries authority with a per-user key: HMAC-SHA256 over the canonical JSON of
the record's kind and content. A record this key did not sign (unsigned, signed elsewhere, or
with a signature copied from another record) is data: it is shown with its origin and needs
the local person's confirmation before it runs, applies or restores anything.

The key is 32 random bytes in ``jupyter_data_dir()/planbook_secret``, made on first use with
permissions 0600; ``PLANBOOK_SECRET_FILE`` names another file (test suites, machines that keep
secrets elsewhere). Whoever can read the key can sign as this person, as with Jupyter's own.
"""

from __future__ import annotations

import getpass
import hmac
import os
import secrets
import socket
import threading
from pathlib import Path
from typing import Any

from planbook.documents.jupyter_data import data_dir
from planbook.engine.hashing import canonical_json
from planbook.errors import MetadataError

#: The key file's name in the user's Jupyter data folder.
SECRET_NAME = "planbook_secret"
#: Names another key file (what tests and special set-ups use).
SECRET_ENV = "PLANBOOK_SECRET_FILE"
#: What every signature starts with, so a later scheme can be told apart.
PREFIX = "hmac-sha256:"

#: The key by what names its file (``PLANBOOK_SECRET_FILE``, the data folder), read once:
#: every signed record asks for it, and making the file's path costs more than the signature.
_keys: dict[tuple[str | None, str], bytes] = {}
_keys_lock = threading.Lock()


def secret_path() -> Path:
    """Where this person's key lives (made on first use)."""
    named = os.environ.get(SECRET_ENV)
    if named:
        return Path(named)
    return Path(data_dir()) / SECRET_NAME


def _key() -> bytes:
    place = (os.environ.get(SECRET_ENV), data_dir())
    key = _keys.get(place)
    if key is None:
        with _keys_lock:
            key = _keys.get(place)
            if key is None:
                key = _keys[place] = _read_or_make(secret_path())
    return key


def _read_or_make(path: Path) -> bytes:
    try:
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise MetadataError(
            f"cannot read planbook's signing key {path}: {exc}; fix its permissions or remove it"
        ) from None
    if text:
        return text.encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = secrets.token_hex(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it just now: use theirs
        return path.read_text(encoding="ascii").strip().encode()
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(fresh + "\n")
    return fresh.encode()


def sign(kind: str, content: Any) -> str:
    """The signature of a record of ``kind`` (approval, answer, mode, checkpoint, grant) with
    ``content`` (JSON-ready): the kind is signed too, so a signature never moves between kinds."""
    digest = hmac.new(_key(), canonical_json([kind, content]), "sha256").hexdigest()
    return PREFIX + digest


def verify(kind: str, content: Any, signature: str | None) -> bool:
    """Whether this person's key signed exactly this record."""
    if not signature:
        return False
    return hmac.compare_digest(sign(kind, content), signature)


def who() -> str:
    """The person at this machine, as records name them: ``user@host``."""
    try:
        user = getpass.getuser()
    except Exception:  # no login name in some containers
        user = "unknown"
    return f"{user}@{socket.gethostname()}"
