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

import gc
import json
import operator
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from itertools import chain, compress, count, islice, repeat
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Any, cast

from planbook.documents.deep_json import KeptJson
from planbook.documents.rope import (
    FEW_PARTS,
    LONG_STRING,
    ROPE_MIN,
    Rope,
    Text,
    append_parts,
    grown,
    in_long_runs,
    listed,
    push,
    runs,
    wrap,
)
from planbook.documents.vouched import REPLACED_MIN, Appended, Replaced

#: Containers this deep or shallower have their text cached (0 is the notebook itself, 2 a
#: cell or a metadata entry, 4 an output, a plan or a checkpoint, 8 a plan's step).
_CACHE_DEPTH = 10
#: Lists at least this long are encoded as possibly grown from one encoded before.
_GROWN_MIN = 32
#: Lists at least this long that did not grow are put together from blocks of ``_BLOCK``
#: items, each kept while it holds the same items (``Encoder._in_blocks``).
_BLOCKED_MIN = 256
_BLOCK = 64
#: Objects with at least this many entries are put together from blocks of
#: ``_DICT_BLOCK`` entries the same way (``Encoder._dict_in_blocks``): a notebook's plans,
#: one of which changes at every step, and its blobs.
_BLOCKED_DICT_MIN = REPLACED_MIN
_DICT_BLOCK = 16
#: In a block of entries, texts shorter than this are joined into runs (copying a plan's few
#: KB costs less than carrying it as a piece through every container above and the write);
#: longer ones (an image's, a blob's) stay pieces of their own.
_JOINED_BELOW = 8192
#: Objects with at least this many entries (and fewer than ``_BLOCKED_DICT_MIN``) keep their
#: entries' texts, so the next one of their lineage encodes only the entries that changed
#: (``Encoder._kept_object``): a plan's step, a step's result, a cell, a checkpoints' bucket.
_KEPT_DICT_MIN = 6
#: A missing key's value, told apart from every value a notebook holds.
_MISSING = object()
#: A cache entry's container (the entry is (container, its text)).
_container_of = operator.itemgetter(0)
#: Mime types whose text nbformat splits into lines besides text/*.
_SPLIT_MIMES = frozenset({"image/svg+xml", "application/javascript"})


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
        #: (id of its first item, depth) -> (a long list, its text, its items' texts unless it
        #: is in blocks): a list that is appended to (a plan's results grow by one at every
        #: step) starts with the same items; one of the same length differs in a few.
        self._lists: dict[tuple[int, int], tuple[list[Any], Text, list[Text] | None]] = {}
        #: (id of its first value, depth) -> (a long object, its largest key, its text): an
        #: object that gains entries after its last key (the log's bucket) starts the same.
        self._dicts: dict[tuple[int, int], tuple[dict[str, Any], str, Text]] = {}
        #: The notebook's keys, its values and its text, as last encoded (``_top_text``).
        self._top: tuple[list[str], list[Any], Text] | None = None
        #: (its lineage, ``_lineage``) -> (an object of ``_KEPT_DICT_MIN`` entries or more,
        #: its entries' texts in the file's order once its lineage was met twice, their
        #: layout when in pieces): see ``_kept_object``.
        self._kept: dict[
            tuple[int, int], tuple[dict[str, Any], list[Text] | None, _Pieces | None]
        ] = {}
        #: (id of its first item, depth) -> (a block of a very long list, its pieces, their
        #: length): see ``_in_blocks``.
        self._blocks: dict[tuple[int, int], tuple[list[Any], list[str], int]] = {}
        #: (id of its first value, depth) -> (a block of a long object's keys and values, what
        #: leads it, its pieces, their length): see ``_dict_in_blocks``.
        self._dict_blocks: dict[
            tuple[int, int], tuple[tuple[str, ...], list[Any], str, list[str], int]
        ] = {}
        self._dict_blocks_used: set[tuple[int, int]] = set()
        #: (depth, its first key) -> a long object as last encoded (``_long_object``): the
        #: next one with the same keys is the same text but for the blocks whose values changed
        self._objects: dict[tuple[int, str], _LongObject] = {}

    def prepare(self, nb: dict[str, Any]) -> None:
        """Encode what changed and keep it, without joining the file's text: a change the file
        could not hold (a lone surrogate in UTF-8) raises UnicodeEncodeError here."""
        self.encoded = 0
        self._top_text(nb)

    def pieces(self, nb: dict[str, Any]) -> list[str]:
        """The file's text in pieces, in order, not joined (long ones are the very strings
        held for unchanged containers)."""
        self.encoded = 0
        value = self._top_text(nb)
        if self._added > max(1000, self._live):
            self._prune(nb)
        if self.style.newline != "\n":  # rare (a file checked out on Windows): joined
            return [self.encode(nb)]
        end = "\n" if self.style.final_newline else ""
        return [*value.pieces, end] if isinstance(value, Rope) else [value + end]

    def encode(self, nb: dict[str, Any]) -> str:
        """The file's text."""
        self.encoded = 0
        value = self._top_text(nb)
        if self._added > max(1000, self._live):
            self._prune(nb)  # now and then, so the cost is spread over many saves
        end = "\n" if self.style.final_newline else ""
        text = "".join([*value.pieces, end]) if isinstance(value, Rope) else value + end
        # JSON text has no raw newline inside a string: every "\n" here is layout.
        return text if self.style.newline == "\n" else text.replace("\n", self.style.newline)

    def _top_text(self, nb: dict[str, Any]) -> Text:
        """The notebook's text, the last one's when it holds the same entries: the notebook
        is the one container changed in place, so it is known by its entries, not by its
        identity, and a save right after its transaction's commit encoded it twice."""
        keys, values = list(nb), list(nb.values())
        top = self._top
        if top is not None and top[0] == keys and all(map(operator.is_, top[1], values)):
            return top[2]
        text = self._value(nb, 0)
        self._top = (keys, values, text)
        return text

    def _prune(self, nb: dict[str, Any]) -> None:
        """Forget the text of containers this notebook no longer holds.

        Called right after the whole tree was encoded, so every container it holds down to
        ``_CACHE_DEPTH`` is cached: the walk goes level by level through cached containers
        only, and each level is found in C (``gc.get_referents`` gives a dict's keys and
        values, a list's items; an id the cache holds is that very container, since the
        cache keeps it alive and ids of live objects differ). A walk in Python, container by
        container, made a pruning at a plan's step 531 cost 8.9 ms (10 cells; now 4.2, most
        of it freeing what was let go) and at step 666 on 2,000 cells 33.8 ms (now 13.1)."""
        cache = self._cache
        keep: dict[int, tuple[object, Text]] = {}
        level: list[object] = [nb]
        for _ in range(_CACHE_DEPTH):
            found = list(filter(cache.__contains__, map(id, gc.get_referents(*level))))
            if not found:
                break
            hits = list(map(cache.__getitem__, found))
            keep.update(zip(found, hits, strict=True))
            level = list(map(_container_of, hits))
        self._cache = keep
        # a grown list or object, or a block, whose container the notebook still holds may
        # be met again: the plan's steps, the log's bucket, the cells
        self._lists = {k: v for k, v in self._lists.items() if id(v[0]) in keep}
        self._dicts = {k: v for k, v in self._dicts.items() if id(v[0]) in keep}
        self._kept = {k: v for k, v in self._kept.items() if id(v[0]) in keep}
        self._blocks = {k: b for k, b in self._blocks.items() if id(b[0][0]) in keep}
        # a block of an object's entries stays while it was met since the last pruning: its
        # values may be strings (blobs), whose holder it cannot tell apart
        self._objects = {k: o for k, o in self._objects.items() if id(o.value) in keep}
        used = self._dict_blocks_used.union(*(o.wheres for o in self._objects.values()))
        self._dict_blocks = {k: b for k, b in self._dict_blocks.items() if k in used}
        self._dict_blocks_used = set()
        self._live = len(keep)
        self._added = 0

    def _value(self, value: Any, depth: int) -> Text:
        if isinstance(value, str):
            if len(value) >= LONG_STRING:
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
            return wrap("[", inner, parts, self.style.indent * depth, "]")
        if len(value) > _GROWN_MIN:
            text = self._grown_dict(value, depth, inner, cache)
            if text is not None:
                return text
        if len(value) >= _BLOCKED_DICT_MIN:
            return self._long_object(value, depth, inner, cache)
        kept = len(value) >= _KEPT_DICT_MIN and depth <= _CACHE_DEPTH
        if kept:
            text = self._kept_object(value, depth, inner, cache)
            if text is not None:
                return text
        items = sorted(value.items()) if self.style.sort_keys else value.items()
        string = self._string
        kept_apart: list[int] = []  # where a long text follows its key as a piece of its own
        for k, v in items:
            hit = cache.get(id(v))
            text = hit[1] if hit is not None and hit[0] is v else encode(v, depth + 1)
            key = string(k) + ": "
            if isinstance(text, Rope):  # only a few per save: the long ones
                keyed = [key]
                push(keyed, text.pieces[0])
                keyed += text.pieces[1:]
                parts.append(Rope(keyed, len(key) + text.size))
            elif len(text) >= LONG_STRING:
                kept_apart.append(len(parts))
                parts.append(Rope([key, text], len(key) + len(text)))
            else:
                parts.append(key + text)
        if kept_apart:
            _join_short(parts, kept_apart)
        text = wrap("{", inner, parts, self.style.indent * depth, "}")
        if len(value) >= _GROWN_MIN:
            self._may_grow(value, depth, text, max(value))
        if kept:
            # an object's entries are kept from its lineage's second text on: one replaced
            # once (a cell that ran) does not keep a copy of its text for nothing
            where = _lineage(value, depth)
            self._kept[where] = (value, None if self._kept.get(where) is None else parts, None)
        return text

    def _kept_object(
        self, value: dict[str, Any], depth: int, inner: str, cache: dict[int, tuple[object, Text]]
    ) -> Text | None:
        """An object that is one encoded before at this depth (of its lineage: ``_lineage``)
        with a few entries added or replaced (a step's status, a checkpoint added to its bucket, a
        plan's steps, a cell's outputs): the kept entries' texts, and the others encoded.
        Which entries differ is found in C; None when more than half of them do. 50 steps
        that each ran a cell encoded every entry of a dozen such objects per step, a third of
        their serializer's lines."""
        where = _lineage(value, depth)
        hit = self._kept.get(where)
        if hit is None:
            return None
        old, old_parts, old_layout = hit
        if old_parts is None:
            return None
        keys = sorted(value) if self.style.sort_keys else list(value)
        values = list(map(value.__getitem__, keys))
        # an entry is kept when its key held the very same value (never changed in place)
        olds = map(old.get, keys, repeat(_MISSING))
        changed = list(compress(count(), map(operator.is_not, values, olds)))
        if len(changed) * 2 > len(keys):
            return None
        old_keys = sorted(old) if self.style.sort_keys else list(old)
        same_keys = keys == old_keys
        parts: list[Text | None]
        if same_keys:
            parts = list(old_parts)
        else:
            kept: Callable[[str], Text | None] = dict(zip(old_keys, old_parts, strict=True)).get
            parts = list(map(kept, keys))  # None where the key is new: it is in ``changed``
        for i in changed:
            parts[i] = self._entry(keys[i], values[i], depth, cache)
        entries = cast("list[Text]", parts)
        outer = self.style.indent * depth
        text: Text
        layout: _Pieces | None = None
        if len(entries) > FEW_PARTS and Rope in map(type, entries):  # as ``wrap`` lays it out
            first = changed[0] if changed else len(entries)
            layout = _Pieces.of(entries, inner, outer, old_layout if same_keys else None, first)
            text = layout.rope
        else:
            text = listed(entries, inner, outer, "{}")
        if len(value) >= _GROWN_MIN:  # as the whole object's text would be
            self._may_grow(value, depth, text, keys[-1] if self.style.sort_keys else max(value))
        self._kept[where] = (value, entries, layout)
        return text

    def _grown_dict(
        self, value: dict[str, Any], depth: int, inner: str, cache: dict[int, tuple[object, Text]]
    ) -> Text | None:
        """A long object that is one encoded before at this depth with short entries added
        after its last key (the log's bucket: up to 64 entries, one more at every step): that
        text, and the new entries alone encoded. None when it is not such an object."""
        first = next(iter(value.values()))
        hit = self._dicts.get((id(first), depth))
        if hit is None:
            return None
        old, last, text = hit
        n = len(old)
        # the same keys first, with the same values (objects never changed in place), in C
        if not (
            n < len(value)
            and all(map(operator.is_, islice(value.values(), n), old.values()))
            and list(islice(value, n)) == list(old)
        ):
            return None
        added = list(islice(value.items(), n, None))
        if self.style.sort_keys:
            if min(k for k, _ in added) <= last:
                return None  # a key among the old ones: the order changes
            added.sort()
        parts: list[Text] = []
        for k, v in added:
            hit_v = cache.get(id(v))
            entry = hit_v[1] if hit_v is not None and hit_v[0] is v else self._value(v, depth + 1)
            if isinstance(entry, Rope) or len(entry) >= LONG_STRING:
                return None  # a long entry: encoded with the whole object, as usual
            parts.append(self._string(k) + ": " + entry)
        out = grown(text, inner, parts, self.style.indent * depth, "}")
        self._may_grow(value, depth, out, max(last, *(k for k, _ in added)))
        return out

    def _grown_list(
        self, value: list[Any], depth: int, inner: str, cache: dict[int, tuple[object, Text]]
    ) -> Text:
        """A long list: when it starts with every item of one encoded before at this depth
        (the same objects), that text is reused and only the items after them are encoded, so
        a list that grows by one item per step costs one item per step, not its length. When
        it has that one's length and first item, and other items in a few places (a step's
        status, a cell's outputs), only those are encoded: the others' texts are the ones
        kept (50 steps that each ran a cell listed the cells and the plan's steps three times
        a step, a third of their serializer's lines)."""
        key = (id(value[0]), depth)
        hit = self._lists.get(key)
        outer = self.style.indent * depth
        start = 0
        changed: list[int] = []
        if hit is not None and len(hit[0]) <= len(value) and hit[0] and hit[0][0] is value[0]:
            old = hit[0]
            if len(old) < len(value) or hit[2] is None:
                if (type(value) is Appended and value.base is old) or all(
                    map(operator.is_, old, value)
                ):
                    start = len(old)
            else:  # the same length: the items that are other objects, found in C
                changed = list(compress(count(), map(operator.is_not, old, value)))
                start = 0 if changed else len(value)
        parts: list[Text] | None
        if hit is not None and start == len(value):
            text, parts = hit[1], hit[2]
        elif hit is not None and hit[2] is not None and 0 < len(changed) <= len(value) // 4:
            parts = list(hit[2])
            texts = self._items([value[i] for i in changed], depth, cache)
            for i, item in zip(changed, texts, strict=True):
                parts[i] = item
            text = listed(parts, inner, outer)
        elif not start and len(value) >= _BLOCKED_MIN:
            # before any item is looked at: the blocks look at their own
            text, parts = self._in_blocks(value, depth, inner, outer, cache), None
        else:
            new = self._items(value[start:], depth, cache)
            if hit is not None and start:
                text = grown(hit[1], inner, new, outer)
                parts = None if hit[2] is None else hit[2] + new
            else:
                text, parts = listed(new, inner, outer), new
        # never changed in place, as every container here; the items' texts are kept for a
        # list short enough to be put together from them (longer ones are in blocks)
        self._lists[key] = (value, text, parts if len(value) < _BLOCKED_MIN else None)
        return text

    def _items(
        self, items: list[Any], depth: int, cache: dict[int, tuple[object, Text]]
    ) -> list[Text]:
        """The texts of a list's ``items`` (at ``depth`` + 1), kept ones from ``cache``."""
        return [
            found[1]
            if (found := cache.get(id(item))) is not None and found[0] is item
            else self._value(item, depth + 1)
            for item in items
        ]

    def _in_blocks(
        self,
        value: list[Any],
        depth: int,
        inner: str,
        outer: str,
        cache: dict[int, tuple[object, Text]],
    ) -> Text:
        """A very long list that is not one encoded before with items appended (the cells,
        one of which a step replaced): its text from blocks of ``_BLOCK`` items, a block's
        pieces kept while it holds the same items, so a cell replaced among 1,200 puts one
        block together again, not the pieces of every cell (about 10,000 a save)."""
        sep = "," + inner
        pieces = ["[" + inner]
        size = len(pieces[0])
        for at in range(0, len(value), _BLOCK):
            items = value[at : at + _BLOCK]
            found = self._blocks.get((id(items[0]), depth))
            if found is None or not (
                len(found[0]) == len(items) and all(map(operator.is_, found[0], items))
            ):
                found = (items, *_block_text(self._items(items, depth, cache), sep))
                self._blocks[(id(items[0]), depth)] = found
            if at:
                pieces.append(sep)
                size += len(sep)
            pieces += found[1]
            size += found[2]
        end = f"\n{outer}]"
        pieces.append(end)  # a line of its own: the list may grow (``grown``)
        return Rope(pieces, size + len(end))

    def _long_object(
        self, value: dict[str, Any], depth: int, inner: str, cache: dict[int, tuple[object, Text]]
    ) -> Text:
        """A long object's text (a notebook's plans, one of which changes at every step, its
        blobs, its log): when it has the keys of the one encoded last at this depth with the
        same first key, in the same order (a copy of it with entries replaced, as every save
        makes), only the blocks whose values are other objects are put together again (found
        in C), and the text is the last one's pieces with those blocks' replaced; else from
        blocks as ``_dict_in_blocks`` makes them. Sorting the keys and a look at each block
        cost a save beside 1,000 past plans 0.45 ms; beside 100, 0.09. Comparing the keys as
        sets and listing the values in the file's order cost it about 40 µs more than
        comparing them in the object's own order, as lists."""
        lineage = (depth, next(iter(value)))
        old = self._objects.get(lineage)
        # the entries that hold other objects, by their place in the file: a key's place
        # among the sorted keys is found by bisection (a few keys change per save)
        places: Iterable[int] | None = None
        if (
            old is not None
            and self.style.sort_keys
            and type(value) is Replaced
            and value.base is old.value
        ):  # a copy that says which entries it set: nothing is compared
            order = old.order
            places = [bisect_left(old.keys, k) for k in value.replaced]
        else:
            order = list(value)
            if old is not None and order == old.order:  # in C: the very key strings, in turn
                changes = map(operator.is_not, value.values(), old.value.values())
                if self.style.sort_keys:
                    places = [bisect_left(old.keys, k) for k in compress(order, changes)]
                else:  # the file's order is the object's own
                    places = compress(count(), changes)
        if old is not None and places is not None:
            keys = old.keys
            layout, wheres, sizes = list(old.layout), list(old.wheres), list(old.sizes)
            last = len(keys) - 1
            for b in sorted({i // _DICT_BLOCK if i < last else len(wheres) - 1 for i in places}):
                at = b * _DICT_BLOCK if b < len(wheres) - 1 else last
                to = min(at + _DICT_BLOCK, last) if at < last else last + 1
                held = list(map(value.__getitem__, keys[at:to]))
                lead = "," + inner if b else "{" + inner
                found = self._block(keys[at:to], held, lead, depth, inner, cache)
                layout[b], wheres[b], sizes[b] = found[3], (id(held[0]), depth), found[4]
        else:
            keys = sorted(value) if self.style.sort_keys else order
            values = list(map(value.__getitem__, keys))
            layout, wheres, sizes = self._dict_in_blocks(keys, values, depth, inner, cache)
        size = sum(sizes) + len(layout[-1][0])  # each block, with what leads it, and the closing
        # the closing line stays a piece of its own: the object may grow (``_grown_dict``)
        pieces = list(chain.from_iterable(layout))  # in C
        text: Text
        if size < ROPE_MIN and not any(len(p) >= LONG_STRING for p in pieces):
            text = "".join(pieces)  # short after all: one string, as any short container
        else:
            text = Rope(pieces, size)
        self._objects[lineage] = _LongObject(value, keys, order, layout, wheres, sizes)
        self._may_grow(value, depth, text, keys[-1] if self.style.sort_keys else max(value))
        return text

    def _may_grow(self, value: dict[str, Any], depth: int, text: Text, largest: str) -> None:
        """Keep a long object's text for ``_grown_dict``: the next one at this depth may be
        this one with entries added after its ``largest`` key (the log's bucket)."""
        self._dicts[(id(next(iter(value.values()))), depth)] = (value, largest, text)

    def _dict_in_blocks(
        self,
        keys: list[str],
        values: list[Any],
        depth: int,
        inner: str,
        cache: dict[int, tuple[object, Text]],
    ) -> tuple[list[list[str]], list[tuple[int, int]], list[int]]:
        """A long object's text (``keys`` and ``values`` in the file's order) from blocks of
        ``_DICT_BLOCK`` entries, a block's pieces kept while it holds the same keys and the same
        values: a plan changed among 100 puts one block together again, where every entry's
        key was encoded and its text carried as pieces through each container above (a
        save grew by about 5 µs of CPU per plan the notebook ever ran). The last entry is a
        block of its own: an object that grows at its end (the log, whose last bucket gains
        an entry at every step) then puts that entry together again, not the 15 before it.
        Returns the text's layout (each block's pieces, the first led by the object's opening
        and the others by their separator, then its closing), the blocks' places in the cache
        and their lengths."""
        layout, wheres, sizes = [], [], []
        last = len(keys) - 1
        for at in [*range(0, last, _DICT_BLOCK), last]:
            to = min(at + _DICT_BLOCK, last) if at < last else last + 1
            lead = "," + inner if at else "{" + inner
            found = self._block(keys[at:to], values[at:to], lead, depth, inner, cache)
            layout.append(found[3])
            wheres.append((id(values[at]), depth))
            sizes.append(found[4])
        layout.append([f"\n{self.style.indent * depth}}}"])
        return layout, wheres, sizes

    def _block(
        self,
        keys: list[str],
        held: list[Any],
        lead: str,
        depth: int,
        inner: str,
        cache: dict[int, tuple[object, Text]],
    ) -> tuple[tuple[str, ...], list[Any], str, list[str], int]:
        """A block of a long object's entries (``keys`` and the values ``held``), led by
        ``lead`` (the object's opening, or the separator after the block before): their
        keys, values, lead, pieces and length, kept while a block at the same place holds the
        same keys and values behind the same lead. The lead is joined to the block's first
        piece: as a piece of its own it was a third of the file's pieces beside 1,000 past
        plans, each looked up and written one by one at every save."""
        kept = tuple(keys)
        where = (id(held[0]), depth)
        self._dict_blocks_used.add(where)
        found = self._dict_blocks.get(where)
        if found is None or not (
            found[0] == kept and found[2] == lead and all(map(operator.is_, found[1], held))
        ):
            parts = [self._entry(k, v, depth, cache) for k, v in zip(kept, held, strict=True)]
            found = (kept, held, lead, *_block_text(parts, "," + inner, _JOINED_BELOW, lead))
            self._dict_blocks[where] = found
        return found

    def _entry(
        self, key: str, value: Any, depth: int, cache: dict[int, tuple[object, Text]]
    ) -> Text:
        """``"key": value`` as an object's entry at ``depth`` + 1: a Rope when the value's
        text is one (its first piece joined to the key)."""
        hit = cache.get(id(value))
        text = hit[1] if hit is not None and hit[0] is value else self._value(value, depth + 1)
        keyed = self._string(key) + ": "
        if isinstance(text, Rope):
            pieces = [keyed]
            push(pieces, text.pieces[0])
            pieces += text.pieces[1:]
            return Rope(pieces, len(keyed) + text.size)
        if len(text) >= _JOINED_BELOW:
            return Rope([keyed, text], len(keyed) + len(text))
        return keyed + text


def _lineage(value: dict[str, Any], depth: int) -> tuple[int, int]:
    """Where an object's kept entries are found (``Encoder._kept_object``): by its "id" (a
    cell's, a plan's, a step's: its next version holds the same string), else by its first
    value (a checkpoints' bucket keeps its first checkpoint)."""
    named = value.get("id")
    return (id(named if type(named) is str else next(iter(value.values()))), depth)


def _block_text(
    parts: list[Text], sep: str, long: int = LONG_STRING, lead: str = ""
) -> tuple[list[str], int]:
    """A block of a long list's or object's ``parts``, ``sep`` between them, after ``lead``:
    its pieces, each run of those shorter than ``long`` joined, and their length. Short
    strings alone (a block of plans, of log entries) are joined in C (``runs``): going
    through their pieces one by one cost a staged step beside 1,000 past plans about 250
    Python lines."""
    size = len(lead) + sum(map(len, parts)) + len(sep) * (len(parts) - 1)
    if Rope not in map(type, parts) and max(map(len, parts)) < long:  # in C
        return runs(cast("list[str]", parts), sep, lead), size
    pieces: list[str] = [lead] if lead else []
    append_parts(pieces, parts, sep)
    return in_long_runs(pieces, long=long)[0], size


@dataclass(frozen=True)
class _Pieces:
    """An object's text as ``wrap`` lays out more than ``FEW_PARTS`` entries, one of them a
    Rope (the log's buckets, the record's parts), with where each entry's pieces start (its
    separator's piece) and at which character."""

    rope: Rope
    starts: list[int]
    offsets: list[int]

    @classmethod
    def of(
        cls, entries: list[Text], inner: str, outer: str, kept: _Pieces | None, first: int
    ) -> _Pieces:
        """``entries``' text; ``kept``: the last one's, whose entries before ``first`` are
        these, so its pieces before them are taken as they are (the log's last bucket gains
        an entry at every step: beside 1,000 past plans, the 48 buckets' pieces before it
        were gone through again at every save, a third of a staged step's Python lines)."""
        sep = "," + inner
        if kept is not None and first >= len(entries):
            return kept  # the same entries
        if kept is not None and first >= 1:
            at = kept.starts[first]
            pieces = kept.rope.pieces[:at]
            starts, offsets = kept.starts[:first], kept.offsets[:first]
            size = kept.offsets[first]
        else:
            first, pieces, starts, offsets = 0, ["{" + inner], [0], [0]
            size = len(pieces[0])
        for i in range(first, len(entries)):
            if i:
                starts.append(len(pieces))
                offsets.append(size)
                pieces.append(sep)  # a piece of its own: what comes before it never changes
                size += len(sep)
            entry = entries[i]
            if isinstance(entry, Rope):
                push(pieces, entry.pieces[0])
                pieces += entry.pieces[1:]
                size += entry.size
            else:
                pieces.append(entry)
                size += len(entry)
        end = f"\n{outer}}}"
        pieces.append(end)
        return cls(Rope(pieces, size + len(end)), starts, offsets)


@dataclass
class _LongObject:
    """A long object as last encoded: the object (held: its id is the cache's key; its values
    are compared with the next one's, in C), its keys in the file's order, its keys in its
    own order (the next one, made from it by a copy, holds the same keys in that order:
    compared as lists, in C, unless it says it is such a copy: ``Replaced``), its text's layout
    (each block's pieces, led by the opening or a separator, then the closing), where its
    blocks are cached, and their lengths."""

    value: dict[str, Any]
    keys: list[str]
    order: list[str]
    layout: list[list[str]]
    wheres: list[tuple[int, int]]
    sizes: list[int]


def _join_short(parts: list[Text], kept_apart: list[int]) -> None:
    """A long text behind its key (``kept_apart``: where) stays a piece of its own when the
    container's text is long anyway, so the cached string itself is written: a log's buckets
    (10 KB each) were copied behind their keys, then hashed and compared as new pieces, at
    every save, a cost that grew with the log. A container short enough to be one string is
    one string, as before (its parts are copied into it all the same)."""
    if sum(map(len, parts)) >= ROPE_MIN or list(map(type, parts)).count(Rope) > len(kept_apart):
        return  # a Rope anyway (long, or holding a long string)
    for i in kept_apart:
        key, text = cast("Rope", parts[i]).pieces
        parts[i] = key + text


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
        chunks.append(view[at:end] if len(encoded) >= LONG_STRING else encoded)
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
