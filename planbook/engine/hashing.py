"""Content hashes: canonical JSON and SHA-256, so the same content always gives the same hash."""

from __future__ import annotations

import hashlib
import json
from typing import Any

ABSENT = "absent"


def canonical_json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def cell_hash(cell_type: str, source: str) -> str:
    """What counts as a cell changing: its type or its source (not outputs, not position)."""
    return sha256(canonical_json({"cell_type": cell_type, "source": source}))


def bytes_hash(data: bytes | None) -> str:
    return ABSENT if data is None else sha256(data)
