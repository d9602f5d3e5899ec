"""Content-addressed, compressed blobs kept in the planbook metadata: each content stored once.

A blob is ``"b85:" + base85(zlib(bytes))`` (base85 costs 25% over the compressed bytes where
base64 costs 33%, and its alphabet needs no escaping in JSON); blobs written by planbook
before schema 2 are plain base64 and are still read. Text kept inside a checkpoint may also be
``"brotli:" + base85(brotli(bytes))``, where that is the smaller (``encode_smallest``).
"""

from __future__ import annotations

import base64
import zlib

import brotli

from planbook.engine.hashing import sha256
from planbook.errors import MetadataError

_B85 = "b85:"


def encode_blob(data: bytes) -> str:
    return _B85 + base64.b85encode(zlib.compress(data, 9)).decode("ascii")


_BROTLI = "brotli:"


def encode_smallest(data: bytes) -> str:
    """``encode_blob``, or ``"brotli:" + base85(brotli(bytes))`` where that is smaller (most
    text of a few KB: brotli's built-in dictionary knows code and prose). Only for text kept
    in a checkpoint (an old source): output items are mostly compressed images already."""
    deflated = encode_blob(data)
    quality = 11 if len(data) <= 1 << 16 else 9  # 11 is slow; a large text gains little more
    packed = brotli.compress(data, quality=quality, mode=brotli.MODE_TEXT)
    if len(_BROTLI) + (len(packed) * 5 + 3) // 4 >= len(deflated):
        return deflated
    return _BROTLI + base64.b85encode(packed).decode("ascii")


def decode_blob(text: str) -> bytes:
    if text.startswith(_B85):
        return zlib.decompress(base64.b85decode(text[len(_B85) :]))
    if text.startswith(_BROTLI):
        return bytes(brotli.decompress(base64.b85decode(text[len(_BROTLI) :])))
    return zlib.decompress(base64.b64decode(text))


class BlobStore:
    """A view over ``state.blobs`` (sha256 -> encoded blob)."""

    def __init__(self, blobs: dict[str, str]) -> None:
        self._blobs = blobs

    def put(self, data: bytes) -> str:
        key = sha256(data)
        if key not in self._blobs:
            self._blobs[key] = encode_blob(data)
        return key

    def __contains__(self, key: object) -> bool:
        return key in self._blobs

    def get(self, key: str) -> bytes:
        try:
            data = decode_blob(self._blobs[key])
        except KeyError:
            raise MetadataError(
                f"checkpoint blob {key[:12]} is missing from the notebook metadata; "
                "this checkpoint cannot be restored"
            ) from None
        except (ValueError, zlib.error):
            data = b""
        if sha256(data) != key:
            raise MetadataError(
                f"checkpoint blob {key[:12]} is corrupted; this checkpoint cannot be restored"
            )
        return data

    def keep_only(self, keys: set[str]) -> None:
        for key in list(self._blobs):
            if key not in keys:
                del self._blobs[key]
