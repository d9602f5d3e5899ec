"""Notebook metadata written into the shared document by difference.

A plan is one entry (plans/<id>) that every step rewrites; written whole, each step's update
would carry the whole plan (35 KB at 100 steps, 3.4 MB for the run), and the server, every
page and every other client would decode it. Instead an entry written a second time becomes a
shared map (or array) of its parts, one level at a time, and from then on only the parts that
differ travel: a step's update carries its status and its result.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from itertools import compress, count
from typing import TYPE_CHECKING, Any

from planbook.documents.base import DELETE, MetadataPath, apply_metadata_changes

if TYPE_CHECKING:
    from pycrdt import Array, Map

_ABSENT: Any = object()


def apply_parts(ymeta: Map[Any], key: str, changes: Mapping[MetadataPath, Any], old: Any) -> Any:
    """``update_metadata`` on the shared document: maps down each path, the value at its end,
    written as its difference from what is there (``old``: metadata[key] as JSON now). The
    JSON after the changes is returned."""
    from pycrdt import Map  # heavy: pycrdt (the live extra)

    if not changes:
        return old
    top = _shared_map(_shared_map(ymeta, "metadata"), key)
    # The maps met on the way down, by path: the paths of one call share their first parts
    # (plans, checkpoints/<bucket>), and each look into a shared map is several pycrdt calls.
    maps: dict[MetadataPath, Map[Any]] = {}
    for path, value in changes.items():
        node = top
        for depth, part in enumerate(path[:-1], 1):
            known = maps.get(path[:depth])
            if known is not None:
                node = known
                continue
            if value is DELETE and not isinstance(_child(node, part), Map | dict):
                break  # nothing there to delete
            node = maps[path[:depth]] = _shared_map(node, part)
        else:
            last = path[-1]
            if value is DELETE:
                if last in node:
                    del node[last]
            else:
                _write_entry(node, last, _json_at(old, path), value)
            for below in [p for p in maps if p[: len(path)] == path]:
                del maps[below]  # replaced or deleted with ``path``
        old = apply_metadata_changes(old, {path: value})
    return old


def _shared_map(parent: Map[Any], key: str) -> Map[Any]:
    """``parent[key]`` as a shared map: created when absent, converted once when it holds a
    whole JSON object (entries kept), replaced when it holds anything else."""
    from pycrdt import Map  # heavy: pycrdt (the live extra)

    child = _child(parent, key)
    if isinstance(child, Map):
        return child
    entries = child if isinstance(child, dict) else {}
    if child is not _ABSENT:
        del parent[key]
    parent[key] = Map(entries)
    found: Map[Any] = parent[key]
    return found


def _child(parent: Map[Any], key: str) -> Any:
    """``parent[key]``, or _ABSENT: one look (pycrdt's ``get`` is ``in`` then ``[]``, and
    ``[]`` asks ``in`` again)."""
    try:
        return parent[key]
    except KeyError:
        return _ABSENT


def _json_at(root: Any, path: MetadataPath) -> Any:
    """The JSON value at ``path`` below ``root``, or _ABSENT."""
    node = root
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return _ABSENT
        node = node[part]
    return node


def _same(old: Any, new: Any) -> bool:
    return old is new or (old is not _ABSENT and old == new)


def _shared_level(value: Any) -> Any:
    """A dict as a shared map, a list as a shared array (their items stay plain values)."""
    from pycrdt import Array, Map  # heavy: pycrdt (the live extra)

    if isinstance(value, dict):
        return Map(value)
    if isinstance(value, list):
        return Array(value)
    return value


def _write_entry(parent: Map[Any], key: str, old: Any, new: Any) -> None:
    """``parent[key] = new``, where ``parent[key]`` holds the JSON ``old`` (or _ABSENT):
    nothing when equal; into the shared map/array by difference when there is one; else the
    value, as shared parts when it replaces an object or a list (it will change again)."""
    if _same(old, new):
        return
    from pycrdt import Array, Map  # heavy: pycrdt (the live extra)

    # the shared value is looked at only where a merge could use it (a scalar is replaced)
    both_maps = isinstance(old, dict) and isinstance(new, dict)
    both_lists = isinstance(old, list) and isinstance(new, list)
    looked = both_maps or both_lists
    current = _child(parent, key) if looked else _ABSENT
    if both_maps and isinstance(current, Map):
        _merge_map(current, old, new)
        return
    # (an array whose length differs from ``old`` is not what it describes: written whole)
    if both_lists and isinstance(current, Array) and len(current) == len(old):
        _merge_array(current, old, new)
        return
    present = (current is not _ABSENT) if looked else (key in parent)  # one look either way
    if present:
        del parent[key]  # delete then set: every reader sees a replaced key
    rewrite = isinstance(old, dict | list) and isinstance(new, dict | list)
    parent[key] = _shared_level(new) if rewrite else new


def _merge_map(ymap: Map[Any], old: dict[str, Any], new: dict[str, Any]) -> None:
    for gone in old.keys() - new.keys():
        if gone in ymap:
            del ymap[gone]
    was = old.get
    for k, v in new.items():
        o = was(k, _ABSENT)
        if o is not v:  # most entries are the very objects written last time: no call
            _write_entry(ymap, k, o, v)


def _merge_array(yarray: Array[Any], old: list[Any], new: list[Any]) -> None:
    """Items that differ in place, then what was appended or cut off (lists in a plan grow
    at their end)."""
    from pycrdt import Array, Map  # heavy: pycrdt (the live extra)

    # the items that are not the very objects written last time, found in C (a plan's
    # steps: one or two of a hundred changed)
    for i in compress(count(), map(operator.is_not, old, new)):
        o, v = old[i], new[i]
        if o == v:
            continue
        current = yarray[i]
        if isinstance(current, Map) and isinstance(o, dict) and isinstance(v, dict):
            _merge_map(current, o, v)
        elif isinstance(current, Array) and isinstance(o, list) and isinstance(v, list):
            if len(current) == len(o):
                _merge_array(current, o, v)
            else:
                yarray[i] = _shared_level(v)
        else:
            rewrite = isinstance(o, dict | list) and isinstance(v, dict | list)
            yarray[i] = _shared_level(v) if rewrite else v
    if len(new) > len(old):
        yarray.extend(new[len(old) :])
    elif len(old) > len(new):
        del yarray[len(new) : len(old)]
