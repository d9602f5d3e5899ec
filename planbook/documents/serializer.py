"""Notebook JSON text exactly as Jupyter writes it (or in the file's own consistent style),
re-encoding only what changed.

Jupyter's writer (``nbformat.writes``) is ``json.dumps(indent=1, sort_keys=True,
ensure_ascii=False)`` over the notebook with multi-line strings split into lists, plus a final
newline. The standard library's indented encoder is pure Python, so re-encoding a large notebook
at every step costs more than the step. Here the notebook is a tree of plain dicts and lists
that is never changed in place (a change makes new containers along its path), so the text of
an unchanged container can be reused: the encoder remembers the text of every container near
the top of the tree (cells, outputs, metadata entries, plans, checkpoints) by identity.

A file written in another consistent style (2 spaces as TensorFlow and Colab write, keys in
their own order, no final newline, ASCII escapes, unsplit strings) keeps that style: ``detect``
finds the style that reproduces the file byte for byte, or says none does.
"""

from __future__ import annotations

import json
import operator
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import accumulate
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Any, cast

from planbook.documents.deep_json import KeptJson

#: Containers this deep or shallower have their text cached (0 is the notebook itself, 2 a
#: cell or a metadata entry, 4 an output, a plan or a checkpoint, 8 a plan's step).
_CACHE_DEPTH = 10
#: Lists at least this long are encoded as possibly grown from one encoded before.
_GROWN_MIN = 32
#: Containers whose text is at least this long keep it in pieces (a ``Rope``).
_ROPE_MIN = 16384
#: Strings at least this long are pieces of their own (a ``Rope``), and so is every container
#: holding one: their text is never copied into each container above them (a cell's image
#: was held five times over: its data, its output, the outputs, the cell, the file).
_LONG_STRING = 1024
#: A Rope of a container of at most this many parts has its short pieces joined where its
#: parts meet (``_joined``): an output, a cell, the record's containers above a plan. Others
#: (the cells, the log's buckets) take their parts' pieces as they are.
_FEW_PARTS = 8
#: A long list's short items (a plan's steps and results, each a few hundred characters) are
#: joined into pieces of about this size: one piece per item made every save list, compare and
#: write two more pieces per staged step (a plan of 500 steps was 1,000 pieces per save).
_GROWN_PIECE = 32768
#: Mime types whose text nbformat splits into lines besides text/*.
_SPLIT_MIMES = frozenset({"image/svg+xml", "application/javascript"})


class Rope:
    """A long text kept in pieces, joined once when the file is written. The containers near
    the top of the tree (the notebook, its metadata, the planbook record, a plan) each hold
    most of the file: joining each one's text copied the whole file several times per save,
    a cost that grew with the file (the checkpoints) at every step. The last piece ends with
    the container's closing line, and is that line alone for a list of more than
    ``_FEW_PARTS`` items (a long list that grows: ``_grown``)."""

    __slots__ = ("pieces", "size", "tail")

    def __init__(self, pieces: list[str], size: int, *, tail: bool = False) -> None:
        self.pieces = pieces
        self.size = size
        #: The piece before the closing line joins short pieces (``_gathered``): it may grow.
        self.tail = tail

    def __len__(self) -> int:
        return self.size


Text = str | Rope
#: A piece's bytes: its own, or a view of the file's bytes as read (``detect_bytes``).
Chunk = bytes | memoryview


@dataclass(frozen=True)
class Style:
    """How a notebook file is laid out."""

    indent: str = " "
    sort_keys: bool = True
    ensure_ascii: bool = False
    split_lines: bool = True
    final_newline: bool = True
    #: "\r\n" for a file checked out on Windows (git autocrlf).
    newline: str = "\n"


#: What Jupyter's own save writes.
JUPYTER = Style()


class Encoder:
    """Encodes notebook trees in one style; keeps the text of containers it saw last time."""

    def __init__(self, style: Style = JUPYTER) -> None:
        self.style = style
        # id -> (the container, its text): holding the container keeps its id from being reused.
        self._cache: dict[int, tuple[object, Text]] = {}
        self._added = 0
        self._live = 0
        self._string = encode_basestring_ascii if style.ensure_ascii else _utf8_string
        #: How many containers the last ``encode`` had to encode afresh (for tests, benchmarks).
        self.encoded = 0
        #: (id of its first item, depth) -> (a long list, its text): a list that is appended
        #: to (a plan's results grow by one at every step) starts with the same items.
        self._lists: dict[tuple[int, int], tuple[list[Any], Text]] = {}

    def prepare(self, nb: dict[str, Any]) -> None:
        """Encode what changed and keep it, without joining the file's text: a change the file
        could not hold (a lone surrogate in UTF-8) raises UnicodeEncodeError here."""
        self.encoded = 0
        self._value(nb, 0)

    def pieces(self, nb: dict[str, Any]) -> list[str]:
        """The file's text in pieces, in order, not joined (long ones are the very strings
        held for unchanged containers)."""
        self.encoded = 0
        value = self._value(nb, 0)
        if self._added > max(1000, self._live):
            self._prune(nb)
        if self.style.newline != "\n":  # rare (a file checked out on Windows): joined
            return [self.encode(nb)]
        end = "\n" if self.style.final_newline else ""
        return [*value.pieces, end] if isinstance(value, Rope) else [value + end]

    def encode(self, nb: dict[str, Any]) -> str:
        """The file's text."""
        self.encoded = 0
        value = self._value(nb, 0)
        if self._added > max(1000, self._live):
            self._prune(nb)  # now and then, so the cost is spread over many saves
        end = "\n" if self.style.final_newline else ""
        text = "".join([*value.pieces, end]) if isinstance(value, Rope) else value + end
        # JSON text has no raw newline inside a string: every "\n" here is layout.
        return text if self.style.newline == "\n" else text.replace("\n", self.style.newline)

    def _prune(self, nb: dict[str, Any]) -> None:
        """Forget the text of containers this notebook no longer holds."""
        keep: dict[int, tuple[object, Text]] = {}
        stack: list[tuple[Any, int]] = [(nb, 0)]
        while stack:
            value, depth = stack.pop()
            if depth > _CACHE_DEPTH:
                continue
            hit = self._cache.get(id(value))
            if hit is not None and hit[0] is value:
                keep[id(value)] = hit
            children = value.values() if isinstance(value, dict) else value
            stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
        self._cache = keep
        self._lists = {}  # the next save of each grown list encodes it whole, once
        self._live = len(keep)
        self._added = 0

    def _value(self, value: Any, depth: int) -> Text:
        if isinstance(value, str):
            if len(value) >= _LONG_STRING:
                return self._long_string(value)
            return self._string(value)
        if isinstance(value, dict | list):
            if depth and depth <= _CACHE_DEPTH:
                hit = self._cache.get(id(value))
                if hit is not None and hit[0] is value:
                    return hit[1]
            self.encoded += 1
            text = self._container(value, depth)
            if depth and depth <= _CACHE_DEPTH:
                self._cache[id(value)] = (value, text)
                self._added += 1
            return text
        if isinstance(value, KeptJson):  # too deep to hold as values: written as it was read
            return value.text
        return _scalar(value)

    def _long_string(self, value: str) -> Rope:
        """A long string as a piece of its own: the string itself between quotes where it
        needs no escape (an image's base64: its text is the tree's, not a copy), else its
        escaped text."""
        text = self._string(value)
        if len(text) == len(value) + 2:  # an escape lengthens the text: there is none
            return Rope(['"', value, '"'], len(text))
        return Rope([text], len(text))

    def _container(self, value: dict[str, Any] | list[Any], depth: int) -> Text:
        if not value:
            return "{}" if isinstance(value, dict) else "[]"
        inner = "\n" + self.style.indent * (depth + 1)
        # The cache is looked up here too, not only in _value: a plan or the checkpoints hold
        # thousands of unchanged entries, and a call per entry is most of a save's cost.
        cache = self._cache if depth + 1 <= _CACHE_DEPTH else {}
        encode = self._value
        parts: list[Text] = []
        if isinstance(value, list):
            if len(value) >= _GROWN_MIN:
                return self._grown_list(value, depth, inner, cache)
            for item in value:
                hit = cache.get(id(item))
                parts.append(
                    hit[1] if hit is not None and hit[0] is item else encode(item, depth + 1)
                )
            return _wrap("[", inner, parts, self.style.indent * depth, "]")
        items = sorted(value.items()) if self.style.sort_keys else value.items()
        string = self._string
        for k, v in items:
            hit = cache.get(id(v))
            text = hit[1] if hit is not None and hit[0] is v else encode(v, depth + 1)
            key = string(k) + ": "
            if isinstance(text, Rope):  # only a few per save: the long ones
                keyed = [key]
                _push(keyed, text.pieces[0])
                keyed += text.pieces[1:]
                parts.append(Rope(keyed, len(key) + text.size))
            else:
                parts.append(key + text)
        return _wrap("{", inner, parts, self.style.indent * depth, "}")

    def _grown_list(
        self, value: list[Any], depth: int, inner: str, cache: dict[int, tuple[object, Text]]
    ) -> Text:
        """A long list: when it starts with every item of one encoded before at this depth
        (the same objects), that text is reused and only the items after them are encoded, so
        a list that grows by one item per step costs one item per step, not its length."""
        key = (id(value[0]), depth)
        hit = self._lists.get(key)
        outer = self.style.indent * depth
        start = 0
        if hit is not None and len(hit[0]) <= len(value):
            old = hit[0]
            if old and old[0] is value[0] and all(map(operator.is_, old, value)):
                start = len(old)
        parts: list[Text] = []
        for item in value[start:]:
            found = cache.get(id(item))
            parts.append(
                found[1] if found is not None and found[0] is item else self._value(item, depth + 1)
            )
        if hit is not None and start == len(value):
            text = hit[1]
        elif hit is not None and start:
            text = _grown(hit[1], inner, parts, outer)
        else:
            text = _wrap("[", inner, parts, outer, "]")
            if isinstance(text, Rope) and Rope not in map(type, parts):  # in C
                text = _in_runs(cast("list[str]", parts), inner, outer, text.size)
        self._lists[key] = (value, text)  # never changed in place, as every container here
        return text


def _wrap(opening: str, inner: str, parts: list[Text], outer: str, closing: str) -> Text:
    """``opening``, the parts one per line, ``closing``: one string, or a Rope when long (a
    part that is a Rope makes its container one too, as it is at least as long)."""
    size = sum(map(len, parts))
    if size < _ROPE_MIN and not _holds_rope(parts, size):
        short = cast("list[str]", parts)
        return f"{opening}{inner}{(',' + inner).join(short)}\n{outer}{closing}"
    sep = "," + inner
    pieces = [opening + inner]
    end = f"\n{outer}{closing}"
    if len(parts) <= _FEW_PARTS:
        _joined(pieces, parts, sep)
        _push(pieces, end)
    else:
        _append(pieces, parts, sep)
        pieces.append(end)  # a line of its own: a long list may grow (``_grown``)
    start = len(opening) + len(inner)
    return Rope(pieces, start + size + len(sep) * (len(parts) - 1) + len(end))


def _grown(old: Text, inner: str, parts: list[Text], outer: str) -> Text:
    """The text of a list that is ``old``'s list with ``parts`` appended."""
    closing = f"\n{outer}]"
    sep = "," + inner
    if isinstance(old, Rope):
        pieces = old.pieces[:-1]
        size = old.size - len(closing)
    else:
        pieces = [old[: -len(closing)]]
        size = len(pieces[0])
    size += sum(map(len, parts)) + len(sep) * len(parts) + len(closing)
    if size < _ROPE_MIN and not isinstance(old, Rope) and not _holds_rope(parts, size):
        return f"{pieces[0]}{sep}{sep.join(cast('list[str]', parts))}{closing}"
    # the list's own text before, unless its last piece is a long string of its last item
    start, tail = len(pieces) - 1, old.tail if isinstance(old, Rope) else True
    pieces.append(sep)
    _append(pieces, parts, sep)
    pieces.append(closing)
    return _gathered(pieces, start, tail)


def _holds_rope(parts: list[Text], size: int) -> bool:
    """Is one of ``parts`` (``size`` long together) a Rope? Only a part holding a long string
    can be one below ``_ROPE_MIN``, so shorter parts are not looked at one by one."""
    return size >= _LONG_STRING and Rope in map(type, parts)  # in C: no loop that grows


def _append(pieces: list[str], parts: list[Text], sep: str) -> None:
    """``parts`` onto ``pieces``, ``sep`` between them, Ropes by their pieces."""
    for i, part in enumerate(parts):
        if i:
            pieces.append(sep)
        if isinstance(part, Rope):
            pieces.extend(part.pieces)
        else:
            pieces.append(part)


def _in_runs(parts: list[str], inner: str, outer: str, size: int) -> Rope:
    """A long list of short items (no long string among them) as pieces of about
    ``_GROWN_PIECE`` each, found and joined in C (``accumulate``, ``bisect``, ``join``): a
    Python loop over 2,000 cells or 1,000 steps would cost more than the pieces save."""
    sep = "," + inner
    ends = list(accumulate(map(len, parts)))  # the text of parts[:i + 1], without separators
    pieces, i = [], 0
    while i < len(parts):
        # the first part is always taken, however long: a run is never empty
        j = max(i + 1, bisect_right(ends, (ends[i - 1] if i else 0) + _GROWN_PIECE, lo=i))
        pieces.append(("[" + inner if i == 0 else sep) + sep.join(parts[i:j]))
        i = j
    pieces.append(f"\n{outer}]")
    return Rope(pieces, size, tail=True)


def _gathered(pieces: list[str], start: int, tail: bool) -> Rope:
    """``pieces`` (the last one closing a long list) with each run of short ones from
    ``start`` on joined into pieces of up to ``_GROWN_PIECE``; ``tail``: the piece at
    ``start`` is such a run already (it may grow). A long list's text is then a piece per 30 KB
    or so, not two per item, and a list grown by a few items looks at those items only; a
    long string (an image) stays a piece of its own, never copied."""
    out = pieces[:start]
    run: list[str] = []
    size = 0
    for i, piece in enumerate(pieces[start:-1]):
        short = len(piece) < _LONG_STRING or (i == 0 and tail)
        if short and size + len(piece) <= _GROWN_PIECE:
            run.append(piece)
            size += len(piece)
            continue
        if run:
            out.append("".join(run))
        run, size = ([piece], len(piece)) if short else ([], 0)
        if not short:
            out.append(piece)
    if run:
        out.append("".join(run))
    out.append(pieces[-1])
    return Rope(out, sum(map(len, out)), tail=bool(run))


def _joined(pieces: list[str], parts: list[Text], sep: str) -> None:
    """``parts`` onto ``pieces``, ``sep`` between them, the short pieces where two meet joined
    (``_push``): a container of a few parts holding a long string (an output, a cell) is then
    about three pieces, the text before the string, the string, the text after. Only where
    parts meet: a part's own pieces were joined when it was made, so this costs a few steps
    per part, not one per piece below it (each container above a plan looked at every piece
    of the plan at every save)."""
    for i, part in enumerate(parts):
        text = part.pieces[0] if isinstance(part, Rope) else part
        if i:
            if len(text) < _LONG_STRING:
                text = sep + text
            else:
                _push(pieces, sep)
        _push(pieces, text)
        if isinstance(part, Rope):
            pieces += part.pieces[1:]


def _push(pieces: list[str], text: str) -> None:
    """``text`` onto ``pieces``, joined to the last piece when both are short: a long string
    stays a piece of its own, and the keys and separators around it make a few short pieces,
    not one each (a cell of images was thirty pieces, and a save wrote them one by one)."""
    if pieces and len(text) < _LONG_STRING and len(pieces[-1]) + len(text) < _LONG_STRING:
        pieces[-1] += text
    else:
        pieces.append(text)


def _utf8_string(value: str) -> str:
    """A JSON string as written unescaped; UnicodeEncodeError when UTF-8 cannot hold it (a
    lone surrogate), so a change is refused where it is made, not when the file is joined."""
    if not value.isascii():
        value.encode("utf-8")
    return encode_basestring(value)


def _scalar(value: Any) -> str:
    # Same spelling as json.dumps (True -> true, None -> null, floats by repr, NaN as NaN).
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is int:
        return int.__repr__(value)
    return json.dumps(value)


def guess_style(text: str | bytes, nb: dict[str, Any]) -> Style | None:
    """The style ``text`` (or the file's bytes) looks written in, from its first line, its
    end and how its cells store their sources, without encoding anything (what a change
    needs before the first save, when ``detect`` confirms it); None when it is not in any
    consistent style."""
    head = text[:200].decode("utf-8", "replace") if isinstance(text, bytes) else text[:200]
    newline = "\r\n" if head.startswith("{\r\n") else "\n"
    indent = _indent_of(head.replace("\r\n", "\n") if newline != "\n" else head)
    if indent is None:
        return None
    return Style(
        indent=indent,
        newline=newline,
        final_newline=text[-1:] in (b"\n", "\n"),
        split_lines=not _has_unsplit_source(nb),
    )


def detect_bytes(data: bytes, nb: dict[str, Any]) -> tuple[Encoder, list[str], list[Chunk]] | None:
    """``detect`` for a file's bytes, compared piece by piece (nothing the size of the file
    is made: no decoded text, no joined one): the encoder, its pieces of the file's text
    and their bytes; None when no style writes ``nb`` back as exactly ``data``."""
    guess = guess_style(data, nb)
    if guess is None:
        return None
    base = replace(guess, ensure_ascii=data.isascii() and not _all_ascii(nb))
    for style in (base, replace(base, sort_keys=False)):
        encoder = Encoder(style)
        try:
            pieces = encoder.pieces(nb)
            chunks = _as_read(data, pieces)
        except UnicodeEncodeError:  # not a text UTF-8 holds: written as Jupyter would
            return None
        if chunks is not None:
            return encoder, pieces, chunks
    return None


def _as_read(data: bytes, pieces: list[str]) -> list[Chunk] | None:
    """The bytes of ``pieces`` where ``data`` holds exactly their text, in order, else None. A
    long piece's bytes are a view of ``data`` itself, not a copy: the file's bytes as read
    become the bytes the next saves write (a copy of each doubled the memory of a notebook of
    images at its first save)."""
    view, at, chunks = memoryview(data), 0, []
    for piece in pieces:
        encoded = piece.encode("utf-8")
        end = at + len(encoded)
        if view[at:end] != encoded:
            return None
        chunks.append(view[at:end] if len(encoded) >= _LONG_STRING else encoded)
        at = end
    return chunks if at == len(data) else None


def same_bytes(data: bytes, chunks: Sequence[Chunk]) -> bool:
    """``data`` is ``chunks`` joined (compared in place, nothing copied)."""
    if len(data) != sum(map(len, chunks)):
        return False
    view, at = memoryview(data), 0
    for chunk in chunks:
        if view[at : at + len(chunk)] != chunk:
            return False
        at += len(chunk)
    return True


def detect(text: str, nb: dict[str, Any]) -> tuple[Style, Encoder] | None:
    """The style that writes ``nb`` (parsed from ``text``) back as exactly ``text``, with an
    encoder that already holds the text of every container; None when no style does."""
    try:
        found = detect_bytes(text.encode("utf-8"), nb)
    except UnicodeEncodeError:  # not a text UTF-8 holds: written as Jupyter would
        return None
    return None if found is None else (found[0].style, found[0])


def _indent_of(text: str) -> str | None:
    if not text.startswith("{\n"):
        return None
    line = text[2 : text.find("\n", 2)]
    indent = line[: len(line) - len(line.lstrip(" \t"))]
    return indent or None


def _has_unsplit_source(nb: dict[str, Any]) -> bool:
    # nbformat always writes a source as a list of lines (even "" as []): a string means the
    # tool that wrote the file does not split.
    return any(
        isinstance(cell, dict) and isinstance(cell.get("source"), str)
        for cell in nb.get("cells", [])
    )


def _all_ascii(nb: dict[str, Any]) -> bool:
    """Is every string of the tree, keys too, ASCII (so its unescaped JSON text is)? Walked,
    not dumped: the dump was a copy of the whole file, twice the memory of its bytes."""
    stack: list[Any] = [nb]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if not value.isascii():
                return False
        elif isinstance(value, dict):
            if not all(str(key).isascii() for key in value):
                return False
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, KeptJson) and not value.text.isascii():
            return False  # written as its text (deep_json.py)
    return True


def split_text(text: str, style: Style) -> str | list[str]:
    """A multi-line string as the style stores it (nbformat: a list of lines)."""
    return text.splitlines(True) if style.split_lines else text


def join_text(value: Any) -> Any:
    """The string a split value stands for (lists of lines are joined)."""
    return "".join(value) if isinstance(value, list) else value


def split_output(output: dict[str, Any], style: Style) -> dict[str, Any]:
    """An output dict as nbformat stores it (multi-line text split into lines)."""
    if not style.split_lines:
        return output
    kind = output.get("output_type")
    if kind == "stream" and isinstance(output.get("text"), str):
        return {**output, "text": output["text"].splitlines(True)}
    if kind in ("execute_result", "display_data") and isinstance(output.get("data"), dict):
        return {**output, "data": split_bundle(output["data"], style)}
    return output


def split_bundle(data: dict[str, Any], style: Style) -> dict[str, Any]:
    if not style.split_lines:
        return data
    return {
        key: value.splitlines(True)
        if isinstance(value, str) and (key.startswith("text/") or key in _SPLIT_MIMES)
        else value
        for key, value in data.items()
    }


def join_output(output: dict[str, Any]) -> dict[str, Any]:
    """An output dict with its split text joined back (as nbformat hands it to programs)."""
    kind = output.get("output_type")
    if kind == "stream" and isinstance(output.get("text"), list):
        return {**output, "text": "".join(output["text"])}
    data = output.get("data")
    if isinstance(data, dict) and any(isinstance(v, list) for v in data.values()):
        return {**output, "data": join_bundle(data)}
    return output


def join_bundle(data: dict[str, Any]) -> dict[str, Any]:
    return {
        key: "".join(value)
        if isinstance(value, list) and (key.startswith("text/") or key in _SPLIT_MIMES)
        else value
        for key, value in data.items()
    }
