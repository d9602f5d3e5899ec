"""Content-addressed, compressed blobs kept in the planbook metadata: each content stored once."""

from __future__ import annotations

import base64
import zlib

from planbook.engine.hashing import sha256
from planbook.errors import MetadataError


class BlobStore:
    """A view over ``state.blobs`` (sha256 -> base64(zlib(bytes)))."""

    def __init__(self, blobs: dict[str, str]) -> None:
        self._blobs = blobs

    def put(self, data: bytes) -> str:
        key = sha256(data)
        if key not in self._blobs:
            self._blobs[key] = base64.b64encode(zlib.compress(data, 9)).decode("ascii")
        return key

    def get(self, key: str) -> bytes:
        try:
            data = zlib.decompress(base64.b64decode(self._blobs[key]))
        except KeyError:
            raise MetadataError(
                f"checkpoint blob {key[:12]} is missing from the notebook metadata; "
                "this checkpoint cannot be restored"
            ) from None
        if sha256(data) != key:
            raise MetadataError(
                f"checkpoint blob {key[:12]} is corrupted; this checkpoint cannot be restored"
            )
        return data

    def keep_only(self, keys: set[str]) -> None:
        for key in list(self._blobs):
            if key not in keys:
                del self._blobs[key]
