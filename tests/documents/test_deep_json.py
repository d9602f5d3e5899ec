"""Reading JSON nested deeper than planbook holds (documents/deep_json.py): what ``json.loads``
reads is read the same; deeper parts are kept as their exact text and written back unchanged,
at every depth around the limits (planbook's own, and the C decoder's near 1,000)."""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planbook.documents.deep_json import DEPTH, KeptJson, loads, nested_deeper
from planbook.documents.serializer import JUPYTER, Encoder

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(value=json_values, indent=st.sampled_from([None, 1, 2]))
def test_what_json_reads_is_read_the_same(value: Any, indent: int | None) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    assert loads(text) == json.loads(text)
    assert loads(text.encode("utf-8")) == json.loads(text)


@pytest.mark.parametrize(
    "bad", ["[1,]", '{"a" 1}', "[1 2]", "[", '{"a": 1} x', "[1}", '{"a": [[[', '"\\x"']
)
def test_invalid_json_is_refused_as_json_refuses_it(bad: str) -> None:
    with pytest.raises(json.JSONDecodeError):
        json.loads(bad)
    # the deep path refuses it too (a bad text that is also deeper than planbook holds)
    with pytest.raises(json.JSONDecodeError):
        loads("[" * (DEPTH + 5) + bad + "]" * (DEPTH + 5))


def _nested(depth: int, kind: str) -> str:
    """``depth`` levels of objects or arrays around a string full of brackets and escapes."""
    leaf = json.dumps('x]}"\\[{')
    if kind == "object":
        return '{"k": ' * depth + leaf + "}" * depth
    return "[" * depth + leaf + "]" * depth


def _levels(tree: Any) -> tuple[int, Any]:
    """How many containers wrap the innermost value, and that value."""
    levels = 0
    while isinstance(tree, dict | list):
        tree = tree["k"] if isinstance(tree, dict) else tree[0]
        levels += 1
    return levels, tree


DEPTHS = [1, DEPTH - 3, DEPTH - 2, DEPTH - 1, DEPTH, 350, 995, 1000, 1005, 10_000]


def _notebook(deep: str) -> str:
    """A notebook file (Jupyter's style) whose other extension's metadata is ``deep``."""
    return f'{{\n "cells": [],\n "metadata": {{\n  "other": {deep}\n }}\n}}\n'


@pytest.mark.parametrize("kind", ["object", "array"])
@pytest.mark.parametrize("depth", DEPTHS)
def test_a_deep_part_is_kept_as_its_text_and_written_back_unchanged(depth: int, kind: str) -> None:
    deep = _nested(depth, kind)
    text = _notebook(deep)
    tree = loads(text)
    if depth + 2 <= DEPTH:  # the notebook and its metadata count: read as json.loads reads it
        assert tree == json.loads(text) and not nested_deeper(tree, DEPTH)
        assert _levels(tree["metadata"]["other"]) == (depth, 'x]}"\\[{')
    else:  # the whole entry kept as the file has it, and written back so
        assert tree["metadata"]["other"] == KeptJson(deep)
        assert Encoder(JUPYTER).encode(tree) == text
    assert loads(Encoder(JUPYTER).encode(tree)) == tree


@settings(max_examples=40, deadline=None)
@given(
    depth=st.integers(1, 2 * DEPTH) | st.integers(900, 1100),
    kind=st.sampled_from(["object", "array"]),
    frame=st.sampled_from(["metadata", "cell metadata", "output", "conversation"]),
)
def test_any_depth_around_the_limits_reads_and_writes_back(
    depth: int, kind: str, frame: str
) -> None:
    deep = _nested(depth, kind)
    # where the part stands, and how many containers of the notebook hold it
    place, above = {
        "metadata": ('{"cells": [], "metadata": {"other": %s}}', 2),
        "cell metadata": ('{"cells": [{"metadata": {"x": %s}}], "metadata": {}}', 4),
        "output": (
            '{"cells": [{"outputs": [{"data": {"application/json": %s}}]}], "metadata": {}}',
            6,
        ),
        "conversation": ('{"cells": [], "metadata": {"planbook": {"conversation": %s}}}', 3),
    }[frame]
    text = place % deep
    tree = loads(text)
    written = Encoder(JUPYTER).encode(tree)
    assert loads(written) == tree
    if depth + above <= DEPTH:
        assert tree == json.loads(text)
    else:
        assert nested_deeper(tree, DEPTH) and deep in written
        # kept as its text, and only the part too deep (its neighbours are read)
        assert json.loads(text.replace(deep, "0")) == loads(written.replace(deep, "0"))


def test_reading_a_hundred_thousand_levels_takes_bounded_memory() -> None:
    deep = _nested(100_000, "object")
    tracemalloc.start()
    try:
        tree = loads(deep)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert tree == {"k": KeptJson(deep[len('{"k": ') : -1])}
    # the text is 700 KB: what is held is a few copies of it, not a tree of 100,000 levels
    assert peak < 8 * len(deep), peak
