"""Content-addressed, compressed blobs kept in the planbook metadata: each content stored once.

A blob is ``"b85:<size>:" + base85(zlib(bytes))``: ``size`` is the length of the content, so
reading never inflates more than that (base85 costs 25% over the compressed bytes where base64
costs 33%, and its alphabet needs no escaping in JSON). Text kept inside a checkpoint may also
be ``"brotli:<size>:" + base85(brotli(bytes))``, where that is the smaller
(``encode_smallest``). Blobs written before sizes were recorded (``"b85:" + ...``,
``"brotli:" + ...`` and, before schema 2, plain base64) are still read: their size is first
measured by inflating them in small pieces without keeping them, up to ``MAX_INFLATED``.

A received notebook may hold a compression bomb (a few MB that inflate to GiBs, under the right
hash): inflation streams, keeps at most the recorded size (and never more than
``MAX_INFLATED``), and refuses in one line beyond it.
"""

from __future__ import annotations

import base64
import binascii
import zlib
from collections.abc import Callable, Iterator
from typing import Literal

import brotli

from planbook.engine.hashing import sha256
from planbook.errors import MetadataError

_B85 = "b85:"
_BROTLI = "brotli:"
#: The most any blob may inflate to, recorded size or not (a size is written by whoever wrote
#: the notebook): 64 MiB. A workspace file is at most 2 MiB by default, an output item a few MB.
MAX_INFLATED = 64 * 1024 * 1024
#: How much one inflation step may produce (brotli may overshoot it by one buffer, ~2 MiB).
_PIECE = 1024 * 1024
#: How much encoded text is decoded at once (base85 decoding takes ~30 times its input).
_TEXT_PIECE = 64 * 1024

Method = Literal["zlib", "brotli"]


def encode_blob(data: bytes) -> str:
    return f"{_B85}{len(data)}:" + base64.b85encode(zlib.compress(data, 9)).decode("ascii")


def encode_smallest(data: bytes) -> str:
    """``encode_blob``, or ``"brotli:<size>:" + base85(brotli(bytes))`` where that is smaller
    (most text of a few KB: brotli's built-in dictionary knows code and prose). Only for text
    kept in a checkpoint (an old source): output items are mostly compressed images already."""
    deflated = encode_blob(data)
    quality = 11 if len(data) <= 1 << 16 else 9  # 11 is slow; a large text gains little more
    packed = brotli.compress(data, quality=quality, mode=brotli.MODE_TEXT)
    header = f"{_BROTLI}{len(data)}:"
    if len(header) + (len(packed) * 5 + 3) // 4 >= len(deflated):
        return deflated
    return header + base64.b85encode(packed).decode("ascii")


def decode_blob(text: str, what: str = "a checkpoint's saved text") -> bytes:
    """The content of an encoded blob; ``what`` names it in the one-line refusal of a blob
    that is not one or that inflates beyond its size (MetadataError)."""
    method, size, payload = _parse(text, what)
    if size is None:
        size = _measure(method, payload(), what)
    elif size > MAX_INFLATED:
        raise MetadataError(
            f"{what} records a size of {size:,} bytes, over the {MAX_INFLATED:,}-byte limit on "
            "checkpoint contents: refused, nothing was changed (a corrupted or hostile notebook)"
        )
    pieces: list[bytes] = []
    total = 0
    for piece in _inflate(method, payload(), what):
        total += len(piece)
        if total > size:
            raise _bomb(what, size)
        pieces.append(piece)
    if total != size:
        raise _corrupted(what, f"it holds {total:,} bytes, not the {size:,} it records")
    return b"".join(pieces)


def _parse(text: str, what: str) -> tuple[Method, int | None, Callable[[], Iterator[bytes]]]:
    """(how it is compressed, the recorded size or None, what gives the compressed bytes in
    pieces: once to measure a blob without a size, once more to keep it)."""
    method: Method = "zlib"
    body = text
    if text.startswith(_B85):
        body = text[len(_B85) :]
    elif text.startswith(_BROTLI):
        method, body = "brotli", text[len(_BROTLI) :]
    # Neither alphabet (base85, base64) has ":": a digits-and-colon head is the recorded size.
    head, colon, _ = body[:24].partition(":")
    size = None
    if colon and head.isdigit():
        size, body = int(head), body[len(head) + 1 :]
    b85 = text.startswith((_B85, _BROTLI))
    return method, size, lambda: _decoded(body, b85=b85, what=what)


def _decoded(body: str, *, b85: bool, what: str) -> Iterator[bytes]:
    """The compressed bytes, decoded a piece at a time: the standard library's base85 decoder
    takes about 30 times its input in memory, too much for a blob of a few MB at once."""
    step = _TEXT_PIECE - _TEXT_PIECE % (5 if b85 else 4)  # whole groups of characters
    try:
        for start in range(0, len(body), step):
            chunk = body[start : start + step]
            yield base64.b85decode(chunk) if b85 else base64.b64decode(chunk, validate=True)
    except (ValueError, binascii.Error):
        raise _corrupted(what, "it is not base85 or base64 text") from None


def _measure(method: Method, payload: Iterator[bytes], what: str) -> int:
    """The inflated size of a blob that does not record it, found piece by piece (nothing is
    kept), refused beyond ``MAX_INFLATED``."""
    total = 0
    for piece in _inflate(method, payload, what):
        total += len(piece)
        if total > MAX_INFLATED:
            raise _bomb(what, MAX_INFLATED)
    return total


def _inflate(method: Method, payload: Iterator[bytes], what: str) -> Iterator[bytes]:
    """The inflated content in pieces of about ``_PIECE`` bytes."""
    if method == "brotli":
        yield from _unbrotli(payload, what)
        return
    inflater = zlib.decompressobj()
    try:
        for data in payload:
            while data and not inflater.eof:
                piece = inflater.decompress(data, _PIECE)
                data = inflater.unconsumed_tail
                if piece:
                    yield piece
        while not inflater.eof:  # output still held back inside the inflater
            piece = inflater.decompress(b"", _PIECE)
            if not piece:
                raise _corrupted(what, "its zlib stream ends early")
            yield piece
    except zlib.error:
        raise _corrupted(what, "it is not a zlib stream") from None


def _unbrotli(payload: Iterator[bytes], what: str) -> Iterator[bytes]:
    unbrotli = brotli.Decompressor()
    try:
        for data in payload:
            piece = unbrotli.process(data, output_buffer_limit=_PIECE)
            if piece:
                yield piece
            while not unbrotli.can_accept_more_data() and not unbrotli.is_finished():
                yield unbrotli.process(b"", output_buffer_limit=_PIECE)
        while not unbrotli.is_finished():  # output still held back inside the decoder
            piece = unbrotli.process(b"", output_buffer_limit=_PIECE)
            if not piece:
                raise _corrupted(what, "its brotli stream ends early")
            yield piece
    except brotli.error:
        raise _corrupted(what, "it is not a brotli stream") from None


def _bomb(what: str, size: int) -> MetadataError:
    return MetadataError(
        f"{what} inflates to more than {size:,} bytes (its recorded size or the limit): "
        "refused, nothing was changed (a corrupted or hostile notebook)"
    )


def _corrupted(what: str, problem: str) -> MetadataError:
    return MetadataError(f"{what} is corrupted ({problem}); this checkpoint cannot be restored")


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
            text = self._blobs[key]
        except KeyError:
            raise MetadataError(
                f"checkpoint blob {key[:12]} is missing from the notebook metadata; "
                "this checkpoint cannot be restored"
            ) from None
        what = f"checkpoint blob {key[:12]}"
        data = decode_blob(text, what)
        if sha256(data) != key:
            raise MetadataError(f"{what} is corrupted; this checkpoint cannot be restored")
        return data

    def keep_only(self, keys: set[str]) -> None:
        for key in list(self._blobs):
            if key not in keys:
                del self._blobs[key]
