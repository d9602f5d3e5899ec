"""Long JSON text kept in pieces (a ``Rope``), for the serializer: how a container's text is
put together from its parts without copying what is long (an image's base64, a long list's
text) into each container above it, and how a long list that grows is extended by its new
items alone. The file is written from the pieces, never joined (``documents/file.py``)."""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate
from typing import cast

#: Containers whose text is at least this long keep it in pieces (a ``Rope``).
ROPE_MIN = 16384
#: Strings at least this long are pieces of their own (a ``Rope``), and so is every container
#: holding one: their text is never copied into each container above them (a cell's image
#: was held five times over: its data, its output, the outputs, the cell, the file).
LONG_STRING = 1024
#: A Rope of a container of at most this many parts has its short pieces joined where its
#: parts meet (``_joined``): an output, a cell, the record's containers above a plan. Others
#: (the cells, the log's buckets) take their parts' pieces as they are.
FEW_PARTS = 8
#: A long list's short items (a plan's steps and results, each a few hundred characters) are
#: joined into pieces of about this size: one piece per item made every save list, compare and
#: write two more pieces per staged step (a plan of 500 steps was 1,000 pieces per save).
GROWN_PIECE = 32768


class Rope:
    """A long text kept in pieces, joined once when the file is written. The containers near
    the top of the tree (the notebook, its metadata, the planbook record, a plan) each hold
    most of the file: joining each one's text copied the whole file several times per save,
    a cost that grew with the file (the checkpoints) at every step. The last piece ends with
    the container's closing line, and is that line alone for a list of more than
    ``FEW_PARTS`` items (a long list that grows: ``grown``)."""

    __slots__ = ("pieces", "size", "tail")

    def __init__(self, pieces: list[str], size: int, *, tail: bool = False) -> None:
        self.pieces = pieces
        self.size = size
        #: The piece before the closing line joins short pieces (``_gathered``): it may grow.
        self.tail = tail

    def __len__(self) -> int:
        return self.size


Text = str | Rope


def wrap(opening: str, inner: str, parts: list[Text], outer: str, closing: str) -> Text:
    """``opening``, the parts one per line, ``closing``: one string, or a Rope when long (a
    part that is a Rope makes its container one too, as it is at least as long)."""
    size = sum(map(len, parts))
    if size < ROPE_MIN and not _holds_rope(parts, size):
        short = cast("list[str]", parts)
        return f"{opening}{inner}{(',' + inner).join(short)}\n{outer}{closing}"
    sep = "," + inner
    pieces = [opening + inner]
    end = f"\n{outer}{closing}"
    if len(parts) <= FEW_PARTS:
        _joined(pieces, parts, sep)
        push(pieces, end)
    else:
        append_parts(pieces, parts, sep)
        pieces.append(end)  # a line of its own: a long list may grow (``grown``)
    start = len(opening) + len(inner)
    return Rope(pieces, start + size + len(sep) * (len(parts) - 1) + len(end))


def listed(parts: list[Text], inner: str, outer: str, brackets: str = "[]") -> Text:
    """A list's text (``brackets`` "{}": an object's, its parts its entries) as ``wrap``
    makes it, but a long list of short items (a plan's steps, the cells) is put in runs
    (``in_runs``) at once: wrapping it first went through its items one by one, in Python,
    only to be thrown away (50 steps that each ran a cell spent a seventh of their
    serializer's lines there)."""
    opening, closing = brackets[0], brackets[1]
    if Rope in map(type, parts):  # in C
        return wrap(opening, inner, parts, outer, closing)
    size = sum(map(len, parts))
    if size < ROPE_MIN:
        return wrap(opening, inner, parts, outer, closing)  # one string
    # the opening, then the items one per line, then the closing line, as ``wrap`` counts
    size += 1 + len(inner) + (len(inner) + 1) * (len(parts) - 1) + 2 + len(outer)
    return in_runs(cast("list[str]", parts), inner, outer, size, brackets)


def grown(old: Text, inner: str, parts: list[Text], outer: str, bracket: str = "]") -> Text:
    """The text of a list (``bracket`` "}": an object) that is ``old``'s with ``parts``
    appended; ``old`` held more than ``FEW_PARTS`` parts (its closing line is a piece alone)."""
    closing = f"\n{outer}{bracket}"
    sep = "," + inner
    if isinstance(old, Rope):
        pieces = old.pieces[:-1]
        size = old.size - len(closing)
    else:
        pieces = [old[: -len(closing)]]
        size = len(pieces[0])
    size += sum(map(len, parts)) + len(sep) * len(parts) + len(closing)
    if size < ROPE_MIN and not isinstance(old, Rope) and not _holds_rope(parts, size):
        return f"{pieces[0]}{sep}{sep.join(cast('list[str]', parts))}{closing}"
    # the list's own text before, unless its last piece is a long string of its last item
    start, tail = len(pieces) - 1, old.tail if isinstance(old, Rope) else True
    pieces.append(sep)
    append_parts(pieces, parts, sep)
    pieces.append(closing)
    return _gathered(pieces, start, tail)


def _holds_rope(parts: list[Text], size: int) -> bool:
    """Is one of ``parts`` (``size`` long together) a Rope? Only a part holding a long string
    can be one below ``ROPE_MIN``, so shorter parts are not looked at one by one."""
    return size >= LONG_STRING and Rope in map(type, parts)  # in C: no loop that grows


def append_parts(pieces: list[str], parts: list[Text], sep: str) -> None:
    """``parts`` onto ``pieces``, ``sep`` between them, Ropes by their pieces."""
    for i, part in enumerate(parts):
        if i:
            pieces.append(sep)
        if isinstance(part, Rope):  # its first piece is short text before a long one (a key)
            push(pieces, part.pieces[0])
            pieces += part.pieces[1:]
        else:
            pieces.append(part)


def in_runs(parts: list[str], inner: str, outer: str, size: int, brackets: str = "[]") -> Rope:
    """A long list (or object) of short items (no long string among them) as pieces of about
    ``GROWN_PIECE`` each (``runs``), its closing line a piece of its own."""
    pieces = runs(parts, "," + inner, brackets[0] + inner)
    pieces.append(f"\n{outer}{brackets[1]}")
    return Rope(pieces, size, tail=True)


def runs(parts: list[str], sep: str, head: str = "") -> list[str]:
    """``head``, then ``parts`` with ``sep`` between them, as pieces of about
    ``GROWN_PIECE`` each, found and joined in C (``accumulate``, ``bisect``, ``join``): a
    Python loop over 2,000 cells or 1,000 steps would cost more than the pieces save."""
    ends = list(accumulate(map(len, parts)))  # the text of parts[:i + 1], without separators
    pieces, i = [], 0
    while i < len(parts):
        # the first part is always taken, however long: a run is never empty
        j = max(i + 1, bisect_right(ends, (ends[i - 1] if i else 0) + GROWN_PIECE, lo=i))
        pieces.append((head if i == 0 else sep) + sep.join(parts[i:j]))
        i = j
    return pieces


def _gathered(pieces: list[str], start: int, tail: bool) -> Rope:
    """``pieces`` (the last one closing a long list) with each run of short ones from
    ``start`` on joined into pieces of up to ``GROWN_PIECE``; ``tail``: the piece at
    ``start`` is such a run already (it may grow). A long list's text is then a piece per 30 KB
    or so, not two per item, and a list grown by a few items looks at those items only; a
    long string (an image) stays a piece of its own, never copied."""
    out = pieces[:start]
    more, ends_in_run = in_long_runs(pieces[start:-1], first_short=tail)
    out += more
    out.append(pieces[-1])
    return Rope(out, sum(map(len, out)), tail=ends_in_run)


def in_long_runs(
    pieces: list[str], *, first_short: bool = False, long: int = LONG_STRING
) -> tuple[list[str], bool]:
    """``pieces`` with each run of short ones joined into pieces of up to ``GROWN_PIECE``, a
    long one (``long`` characters or more: an image's string) left alone; ``first_short``:
    take the first as short whatever its length (a run joined before). Also whether the last
    piece is such a run."""
    out: list[str] = []
    run: list[str] = []
    size = 0
    for i, piece in enumerate(pieces):
        short = len(piece) < long or (i == 0 and first_short)
        if short and size + len(piece) <= GROWN_PIECE:
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
    return out, bool(run)


def _joined(pieces: list[str], parts: list[Text], sep: str) -> None:
    """``parts`` onto ``pieces``, ``sep`` between them, the short pieces where two meet joined
    (``push``): a container of a few parts holding a long string (an output, a cell) is then
    about three pieces, the text before the string, the string, the text after. Only where
    parts meet: a part's own pieces were joined when it was made, so this costs a few steps
    per part, not one per piece below it (each container above a plan looked at every piece
    of the plan at every save)."""
    for i, part in enumerate(parts):
        text = part.pieces[0] if isinstance(part, Rope) else part
        if i:
            if len(text) < LONG_STRING:
                text = sep + text
            else:
                push(pieces, sep)
        push(pieces, text)
        if isinstance(part, Rope):
            pieces += part.pieces[1:]


def push(pieces: list[str], text: str) -> None:
    """``text`` onto ``pieces``, joined to the last piece when both are short: a long string
    stays a piece of its own, and the keys and separators around it make a few short pieces,
    not one each (a cell of images was thirty pieces, and a save wrote them one by one)."""
    if pieces and len(text) < LONG_STRING and len(pieces[-1]) + len(text) < LONG_STRING:
        pieces[-1] += text
    else:
        pieces.append(text)
