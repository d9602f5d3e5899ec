"""Reading JSON nested deeper than planbook holds: the deep parts kept as their own text.

Python's C decoder stops with RecursionError near 1,000 levels, and planbook's encoder and
pydantic stop far earlier (about 250); another tool may leave 10,000 levels in a notebook's
metadata, a cell's metadata or an output. A text nested more than ``DEPTH`` levels is parsed
here instead of by ``json.loads``: the notebook's frame (its cells and their fields, its
metadata and planbook's record) is read as values, and each part below it that is too deep
(an extension's metadata entry, an output, the agent's conversation) becomes a ``KeptJson``,
its exact text, never looked into. The serializer writes it back unchanged, so a
save stays byte-identical except for what a step changed; code that needs the value itself
(a checkpoint of that cell's outputs, the page's copy) refuses in one line (``refuse_kept``).

A text is parsed by ``json.loads`` first; telling whether the tree is too deep then costs a
walk over its containers only (its long strings, most of a notebook, are never looked at), and
only a text that is too deep is parsed again, here.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from itertools import compress
from json import decoder
from json.decoder import JSONDecodeError
from typing import Any, NoReturn

from planbook.errors import MetadataError

#: The string scanner ``json.loads`` itself uses (C; typeshed does not list it).
scanstring: Callable[[str, int, bool], tuple[str, int]] = decoder.scanstring  # type: ignore[attr-defined]

#: The most levels of containers (the root counts as one) a tree planbook holds may have.
DEPTH = 100

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"(-?(?:0|[1-9]\d*))(\.\d+)?([eE][-+]?\d+)?")
_STRUCTURE = re.compile(r'["\[\]{}]')
_CONSTANTS: dict[str, Any] = {
    "null": None,
    "true": True,
    "false": False,
    "NaN": math.nan,
    "-Infinity": -math.inf,
    "Infinity": math.inf,
}


class KeptJson:
    """A container too deep to hold as values: its text exactly as the file has it."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KeptJson) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"KeptJson({len(self.text)} characters)"


class _Nests(dict[type, bool]):
    """type -> whether its values nest (a dict, a list, a ``KeptJson``, or a subclass such as
    nbformat's NotebookNode), each type looked at once."""

    def __missing__(self, kind: type) -> bool:
        nests = self[kind] = issubclass(kind, dict | list | KeptJson)
        return nests


_NESTS = _Nests()


def loads(text: str | bytes, depth: int = DEPTH) -> Any:
    """``json.loads(text)``; when that nests more than ``depth`` levels, each part below the
    notebook's frame that does (``_frame``) is kept whole as a ``KeptJson``. Invalid JSON
    raises ``JSONDecodeError`` (a ValueError) as ``json.loads`` does, and so does text that
    is not UTF-8 (``UnicodeDecodeError``)."""
    try:
        tree = json.loads(text)
    except RecursionError:
        tree = None  # deeper than the C decoder goes: parsed below
    else:
        if not nested_deeper(tree, depth):
            return tree
    return _parse(text if isinstance(text, str) else text.decode("utf-8"), depth)


def holds_kept(value: Any) -> bool:
    """Whether ``value`` (a parsed tree) holds a ``KeptJson`` anywhere."""
    return _levels_past(value, None)


def nested_deeper(value: Any, depth: int) -> bool:
    """Whether ``value`` nests containers more than ``depth`` levels (a ``KeptJson`` counts
    as deeper than any)."""
    return _levels_past(value, depth)


def _levels_past(value: Any, depth: int | None) -> bool:
    """Whether ``value`` holds a ``KeptJson`` or (``depth`` given) containers more than
    ``depth`` levels deep. Walked a level at a time, without recursion: a notebook's long
    strings cost nothing here, only its containers."""
    level = [value] if _NESTS[type(value)] else []
    levels = 0
    while level:
        if depth is not None and levels == depth:
            return True
        levels += 1
        below: list[Any] = []
        for item in level:
            if isinstance(item, dict):
                below.extend(item.values())
            elif isinstance(item, list):
                below.extend(item)
            else:
                return True  # a KeptJson
        # the containers among them, picked in C: most of a notebook's values are strings
        level = list(compress(below, map(_NESTS.__getitem__, map(type, below))))
    return False


def plain_copy(value: Any) -> Any:
    """A copy of a JSON tree (nbformat's nodes too) as plain dicts and lists; a ``KeptJson``
    stays as it is."""
    if not holds_kept(value):
        return json.loads(json.dumps(value))
    return _plain(value)  # a tree ``loads`` made: at most DEPTH levels, so copied by recursion


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def refuse_kept(value: Any) -> NoReturn:
    """A ``json.dumps`` ``default``: a ``KeptJson`` is refused in one line."""
    if isinstance(value, KeptJson):
        raise MetadataError(
            f"refused: this content is nested deeper than {DEPTH} levels, which planbook "
            "keeps as it is but does not read or copy; flatten it, or leave this cell to "
            "another tool"
        )
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def kept_text(value: Any) -> str:
    """A ``json.dumps`` ``default`` that stands a ``KeptJson`` in as its text (a string)."""
    if isinstance(value, KeptJson):
        return value.text
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _space(text: str, at: int) -> int:
    match = _SPACE.match(text, at)
    return at if match is None else match.end()


def _fail(message: str, text: str, at: int) -> NoReturn:
    raise JSONDecodeError(message, text, at)


def _kept(text: str, at: int) -> int:
    """Where the container opening at ``at`` ends (its strings skipped as strings)."""
    level = 0
    find = _STRUCTURE.search
    while True:
        match = find(text, at)
        if match is None:
            _fail("Unterminated container", text, at)
        mark, at = match.group(), match.end()
        if mark == '"':
            at = scanstring(text, at, True)[1]
        elif mark in "[{":
            level += 1
        else:
            level -= 1
            if level == 0:
                return at


def _key(text: str, at: int) -> tuple[str, int]:
    """An object's key and the position after its colon."""
    if text[at : at + 1] != '"':
        _fail("Expecting property name enclosed in double quotes", text, at)
    key, at = scanstring(text, at + 1, True)
    at = _space(text, at)
    if text[at : at + 1] != ":":
        _fail("Expecting ':' delimiter", text, at)
    return key, _space(text, at + 1)


def _scalar(text: str, at: int) -> tuple[Any, int]:
    if text[at : at + 1] == '"':
        return scanstring(text, at + 1, True)
    for word, value in _CONSTANTS.items():
        if text.startswith(word, at):
            return value, at + len(word)
    match = _NUMBER.match(text, at)
    if match is None:
        _fail("Expecting value", text, at)
    whole, fraction, exponent = match.groups()
    if fraction or exponent:
        return float(whole + (fraction or "") + (exponent or "")), match.end()
    return int(whole), match.end()


#: The fields of a cell whose items planbook reads (an output's type and bundle).
_READ_WHOLE = frozenset({"outputs", "attachments"})


def _frame(stack: list[tuple[dict[str, Any] | list[Any], list[str]]]) -> bool:
    """Whether a container opening below ``stack`` is part of a notebook's frame, always
    read as values: the notebook, its list of cells, a cell and a cell's fields, the
    notebook's metadata and planbook's record in it. Anything else is kept whole when it is
    too deep: another extension's metadata entry, a cell's metadata entry, one value of an
    output (a mime type's data), a field of planbook's record (the agent's conversation)."""

    def name(entry: tuple[dict[str, Any] | list[Any], list[str]]) -> str | int:
        return entry[1][0] if isinstance(entry[0], dict) else len(entry[0])

    if not stack:
        return True
    first = name(stack[0])
    if first == "cells":  # an output and its fields, an attachment, are read too
        return len(stack) <= 3 or (len(stack) <= 5 and name(stack[2]) in _READ_WHOLE)
    if first == "metadata":
        return len(stack) == 1 or (len(stack) == 2 and name(stack[1]) == "planbook")
    return False


def _part(text: str, at: int, room: int) -> tuple[Any, int]:
    """The value of the container opening at ``at`` (parsed in C) and where it ends; kept
    whole as its text when it nests more than ``room`` levels."""
    try:
        value, end = _DECODER.raw_decode(text, at)
    except RecursionError:  # far too deep for the C decoder: never parsed
        end = _kept(text, at)
        return KeptJson(text[at:end]), end
    if nested_deeper(value, room):
        return KeptJson(text[at:end]), end
    return value, end


def _parse(text: str, depth: int) -> Any:
    """The parse behind ``loads`` for a deep text: the notebook's frame (``_frame``) read
    here without recursion, each part below it read whole in C or kept as its text."""
    # Open containers, innermost last, each with the key its next value goes to (objects).
    stack: list[tuple[dict[str, Any] | list[Any], list[str]]] = []
    at = _space(text, 0)
    while True:
        mark = text[at : at + 1]
        value: Any
        if mark in ("[", "{") and mark and not _frame(stack):
            value, at = _part(text, at, depth - len(stack))
        elif mark in ("[", "{") and mark:
            close = "]" if mark == "[" else "}"
            at = _space(text, at + 1)
            empty: dict[str, Any] | list[Any] = [] if mark == "[" else {}
            if text[at : at + 1] == close:
                value, at = empty, at + 1
            else:
                key: list[str] = []
                if mark == "{":
                    name, at = _key(text, at)
                    key.append(name)
                stack.append((empty, key))
                continue
        else:
            value, at = _scalar(text, at)
        while True:  # the value goes into its container; close what ends here
            if not stack:
                if _space(text, at) != len(text):
                    _fail("Extra data", text, _space(text, at))
                return value
            container, key = stack[-1]
            if isinstance(container, list):
                container.append(value)
            else:
                container[key[0]] = value
            at = _space(text, at)
            mark = text[at : at + 1]
            if mark == ",":
                at = _space(text, at + 1)
                if isinstance(container, dict):
                    key[0], at = _key(text, at)
                break
            if mark != ("]" if isinstance(container, list) else "}"):
                _fail("Expecting ',' delimiter", text, at)
            at += 1
            value = stack.pop()[0]
