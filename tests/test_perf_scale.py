"""A step's cost does not grow with the plan, and what a step costs in durable writes of the
notebook file (issue 10 item 6). Costs are counted, never timed: the Python lines a step
executes (a loop over the plan or the history shows as lines that grow with the step's
number), and the fsync'd saves of a real FileNotebook on a real file."""

from __future__ import annotations

import copy
import json
import operator
import pickle
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace as with_fields
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from planbook.documents import file as file_backend
from planbook.documents.base import DELETE, apply_metadata_changes
from planbook.documents.file import FileNotebook
from planbook.documents.file_stat import Look
from planbook.documents.rope import GROWN_PIECE
from planbook.documents.serializer import JUPYTER, Encoder
from planbook.documents.vouched import Replaced
from planbook.engine.plan_dumps import PlanDumps
from planbook.engine.runner import CellRun
from planbook.engine.stored_record import BUCKET
from planbook.model.cell import Cell
from planbook.model.events import Event
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace
from tests.conftest import make_notebook
from tests.kernel_helper import kernel


def open_session(path: Path) -> Session:
    return Session(
        FileNotebook(path), Workspace(path.parent, protected=(path,)), notebook_path=path
    )


@contextmanager
def identity_comparisons(tally: Callable[[], object]) -> Iterator[set[CodeType]]:
    """While inside, each object compared by identity through ``operator.is_`` or
    ``operator.is_not`` calls ``tally``: the way a loop over a plan's steps is made in C,
    without a line of Python each, so a count of lines does not see it. Yields the code of
    the stand-ins, for a tracer to leave out."""
    real_is, real_is_not = operator.is_, operator.is_not

    def is_(a: object, b: object) -> bool:
        tally()
        return a is b

    def is_not(a: object, b: object) -> bool:
        tally()
        return a is not b

    operator.is_, operator.is_not = is_, is_not
    try:
        yield {is_.__code__, is_not.__code__}
    finally:
        operator.is_, operator.is_not = real_is, real_is_not


@contextmanager
def lines_per_step(
    session: Session, steps: set[int]
) -> Iterator[tuple[dict[int, int], dict[int, int]]]:
    """Python lines executed by each of ``steps`` of a run (step n: from its start to the
    next one's; a step's end is announced later, with the save that holds it), counted by a
    trace function in this thread (the executor runs in it), and the objects each compares by
    identity in C (``identity_comparisons``); calls made outside those steps are not traced
    (that would take seconds)."""
    counts: dict[int, int] = {}
    compared: dict[int, int] = {}
    step = [1]

    def on_event(event: Event) -> None:
        if event.kind == "step_started":
            step[0] = event.data["number"]
        elif event.kind == "run_finished":
            step[0] = 0

    def tally() -> None:
        compared[step[0]] = compared.get(step[0], 0) + 1

    def lines(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line" and step[0] in steps:
            counts[step[0]] = counts.get(step[0], 0) + 1
        return lines

    session.subscribe(on_event)
    with identity_comparisons(tally) as counting:
        counting.add(tally.__code__)  # the counting is not the step's lines

        def calls(frame: FrameType, event: str, arg: Any) -> Any:
            return lines if step[0] in steps and frame.f_code not in counting else None

        sys.settrace(calls)
        try:
            yield counts, compared
        finally:
            sys.settrace(None)


def test_step_k_of_a_long_plan_costs_what_step_10_costs(tmp_path: Path) -> None:
    """Steps 10 and 10 + 64 of one 80-step plan sit at the same place of their checkpoint
    bucket (64 to a bucket), so everything they do is the same but the history behind them:
    a loop over the plan's steps, its results or its checkpoints would add hundreds of lines
    (before this change: 11,300 lines at step 10 and 15,300 at step 290 of a 300-step plan)."""
    path = make_notebook(tmp_path / "n.ipynb", [f"v{i} = {i}" for i in range(10)])
    session = open_session(path)
    ids = [c.id for c in session.cells()]
    for k in range(80):
        session.propose.edit_cell(ids[k % 10], f"v = {k}", reason="r")
    early, late = range(10, 15), range(10 + BUCKET, 15 + BUCKET)
    with lines_per_step(session, {*early, *late}) as (counts, compared):
        assert session.approve().ok
    early_lines = [counts[n] for n in early]
    late_lines = [counts[n] for n in late]
    # min of five: an occasional pruning of the serializer's cache is not the step's own cost.
    # At step 74 the plan's record is long enough to be kept in pieces (serializer ``Rope``):
    # a few lines more per container above it, once, not per step of history (about 45 here)
    assert min(late_lines) - min(early_lines) < 60, (early_lines, late_lines)
    # and no loop in C over what came before: the checkpoints saved were compared one by one
    # with the last save's at every step (213 objects at step 10, 284 at step 74; now 124
    # and 131: the checkpoints' bucket, 64 at most)
    late_compared = min(compared.get(n, 0) for n in late)
    assert late_compared - min(compared.get(n, 0) for n in early) < 20, compared
    assert len(json.loads(path.read_text())["metadata"]["planbook"]["checkpoints"]) == 2


def changes_of(**kinds: tuple[int, int]) -> st.SearchStrategy[list[tuple[str, int]]]:
    """Up to 12 changes, each a kind and a number within that kind's bounds."""
    one = st.one_of(
        *(st.tuples(st.just(k.replace("_", " ")), st.integers(*b)) for k, b in kinds.items())
    )
    return st.lists(one, min_size=1, max_size=12)


@settings(max_examples=60, deadline=None)
@given(
    changes_of(append=(1, 3), cut=(1, 3), replace=(0, 60), replace_several=(2, 15)),
    st.sampled_from([" ", "  "]),
    st.sampled_from([1, 500, 1500]),
)
def test_a_list_grown_between_saves_is_written_as_json_would_write_it(
    changes: list[tuple[str, int]], indent: str, width: int
) -> None:
    """The serializer reuses a long list's text when the next list starts with the same
    items: appended to, cut back, changed in the middle or at its head, or in several places
    at once (a few: only those are encoded again; more than a quarter: the whole list), it
    writes what json.dumps writes (with items of 500 characters the list and everything
    above it are long enough to be kept in pieces, as a plan's checkpoints are; with 1,500
    each item holds a long string, a piece of its own that the short pieces around it are
    never joined to)."""
    encoder = Encoder(with_fields(JUPYTER, indent=indent))
    items: list[Any] = [{"n": i, "text": ["a\n", "b" * width]} for i in range(40)]
    serial = 40
    for kind, n in changes:
        if kind == "append":
            items = items + [{"n": serial + j, "text": "c" * width} for j in range(n)]
            serial += n
        elif kind == "cut":
            items = items[: max(1, len(items) - n)]
        elif kind == "replace several":
            items = list(items)
            for j in range(n):  # spread over the list after its head (its lineage)
                at = 1 + j * (len(items) - 1) // n
                items[at] = {"n": -at, "several": n}
        else:
            items = list(items)
            items[n % len(items)] = {"n": -n, "replaced": True}
        nb = {"cells": [], "metadata": {"planbook": {"plans": {"p": {"results": items}}}}}
        expected = json.dumps(nb, indent=indent, sort_keys=True, ensure_ascii=False) + "\n"
        assert encoder.encode(nb) == expected


@settings(max_examples=40, deadline=None)
@given(
    changes_of(replace=(0, 700), insert=(0, 700), drop=(0, 700), append=(1, 70)),
    st.sampled_from([" ", "  "]),
    st.sampled_from([1, 1500]),
)
def test_a_very_long_list_changed_anywhere_is_written_as_json_would_write_it(
    changes: list[tuple[str, int]], indent: str, width: int
) -> None:
    """A list of hundreds of items (a notebook's cells) is put together from blocks of items
    kept while they hold the same items: a cell replaced, inserted or deleted anywhere, or
    cells appended, it writes what json.dumps writes (with 1,500 characters each item holds a
    long string, a piece of its own, as a cell's image)."""
    encoder = Encoder(with_fields(JUPYTER, indent=indent))
    items: list[Any] = [{"n": i, "source": ["x\n", "y" * width]} for i in range(300)]
    for kind, n in changes:
        items = list(items)  # never changed in place, as the document's cells
        at = n % (len(items) + 1)
        if kind == "replace" and items:
            items[at % len(items)] = {"n": -n, "replaced": "z" * (width // 2)}
        elif kind == "insert":
            items.insert(at, {"n": n, "inserted": True})
        elif kind == "drop" and len(items) > 1:
            del items[at % len(items)]
        elif kind == "append":
            items += [{"n": 1000 + j} for j in range(n)]
        nb = {"cells": items, "metadata": {}}
        expected = json.dumps(nb, indent=indent, sort_keys=True, ensure_ascii=False) + "\n"
        assert encoder.encode(nb) == expected


def test_a_cell_replaced_among_many_puts_one_block_together_again() -> None:
    """Replacing one cell of 1,200 encodes that cell and puts one block of 64 cells together
    again, not every cell's pieces: counted as the text the save makes afresh."""
    encoder = Encoder(JUPYTER)
    cells: list[Any] = [{"n": i, "source": "x" * 2000} for i in range(1200)]
    nb = {"cells": cells, "metadata": {}}
    encoder.pieces(nb)  # the first save, which also prunes the cache (1,200 new containers)
    first = encoder.pieces(nb)
    cells = list(cells)
    cells[600] = {"n": -1, "source": "changed"}
    nb = {"cells": cells, "metadata": {}}
    second = encoder.pieces(nb)
    assert "".join(second) == json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    kept = {id(piece) for piece in first}
    fresh = sum(len(piece) for piece in second if id(piece) not in kept)
    # one block of 64 cells: its short text joined again (about 40 characters a cell), its
    # long strings kept as they were; every cell's short text was made again (about 48,000)
    assert 0 < fresh < 64 * 60, fresh


def test_an_item_replaced_in_a_list_encodes_that_item_not_the_list() -> None:
    """A list of 40 or of 200 items (the cells, a plan's steps) with one item replaced: the
    save encodes that item and puts the list together from the texts it kept for the others,
    in C, so it runs as many Python lines at 200 items as at 40 (it went through every
    item, about five lines each: three times per step that runs a cell)."""

    def replaced_one(n: int) -> int:
        encoder = Encoder(JUPYTER)
        items: list[Any] = [{"n": i, "status": "pending"} for i in range(n)]
        encoder.pieces({"cells": [], "metadata": {"steps": items}})
        items = list(items)
        items[n // 2] = {"n": n // 2, "status": "done"}
        nb = {"cells": [], "metadata": {"steps": items}}
        return lines_of_save(encoder, nb)

    short, long = replaced_one(40), replaced_one(200)
    assert long - short < 20, (short, long)


@settings(max_examples=60, deadline=None)
@given(
    changes_of(add=(1, 3), add_before=(1, 3), drop=(0, 60), replace=(0, 60)),
    st.sampled_from([" ", "  "]),
    st.booleans(),
    st.sampled_from([1, 300, 1500]),
)
def test_an_object_grown_between_saves_is_written_as_json_would_write_it(
    changes: list[tuple[str, int]], indent: str, sort_keys: bool, width: int
) -> None:
    """The serializer reuses a long object's text when the next one has the same entries
    first and new keys after its last (the log's bucket gains an entry at every step): added
    after, added before (the order changes), dropped or replaced, it writes what json.dumps
    writes, keys sorted or in their own order (with entries of 300 characters the object is
    long enough to be kept in pieces; with 1,500 each entry is a piece of its own)."""
    encoder = Encoder(with_fields(JUPYTER, indent=indent, sort_keys=sort_keys))
    entries: dict[str, Any] = {
        f"{i:06d}": {"at": "t", "detail": "d" * width} for i in range(100, 140)
    }
    serial, before = 140, 99
    for kind, n in changes:
        entries = dict(entries)  # never changed in place, as the store's objects
        if kind == "add":
            for _ in range(n):
                entries[f"{serial:06d}"] = {"at": "t", "detail": "e" * width}
                serial += 1
        elif kind == "add before":
            for _ in range(n):
                entries[f"{before:06d}"] = {"at": "t", "before": True}
                before -= 1
        elif len(entries) > 1:
            key = list(entries)[n % len(entries)]
            if kind == "drop":
                del entries[key]
            else:
                entries[key] = {"replaced": n}
        nb = {"cells": [], "metadata": {"planbook": {"log": {"0001": entries}}}}
        expected = json.dumps(nb, indent=indent, sort_keys=sort_keys, ensure_ascii=False) + "\n"
        assert encoder.encode(nb) == expected


@settings(max_examples=80, deadline=None)
@given(
    changes_of(add=(0, 10**6), replace=(0, 60), replace_several=(2, 6), drop=(0, 60)),
    st.sampled_from([" ", "  "]),
    st.booleans(),
    st.sampled_from([1, 300, 1500]),
    st.booleans(),
)
def test_an_object_changed_in_a_few_entries_is_written_as_json_would_write_it(
    changes: list[tuple[str, int]], indent: str, sort_keys: bool, width: int, named: bool
) -> None:
    """The serializer keeps the entries' texts of an object of 6 to 63 entries (a step, a
    plan, a checkpoints' bucket) and, for the next one of its lineage (the same "id", else
    the same first value), encodes only the entries that are other objects: with a key added
    anywhere (a checkpoint's random id), one or several replaced, one dropped, keys sorted or
    in their own order, it writes what json.dumps writes. Two sibling objects share their
    first value, so their lineages meet, and the record's short ones are kept as well; with
    entries of 300 characters the bucket is long enough to be kept in pieces, with 1,500
    each entry holds a long string."""
    encoder = Encoder(with_fields(JUPYTER, indent=indent, sort_keys=sort_keys))
    shared = "pending"  # the same string first in both siblings: the same lineage
    bucket: dict[str, Any] = {"first": shared}
    if named:
        bucket["id"] = "bucket-1"
    bucket |= {f"cp-{i * 7919 % 10007:05d}": {"v": "x" * width} for i in range(12)}
    sibling: dict[str, Any] = {"first": shared, **{f"k{i}": i for i in range(8)}}
    for kind, n in changes:
        bucket = dict(bucket)  # never changed in place, as the store's objects
        keys = [k for k in bucket if k.startswith("cp-")]
        if kind == "add" and len(bucket) < 63:
            bucket[f"cp-{n % 100000:05d}"] = {"v": "y" * width, "n": n}
        elif kind == "replace several":
            for j in range(min(n, len(keys))):
                bucket[keys[j * len(keys) // n]] = {"several": j}
        elif kind == "drop" and len(keys) > 6:
            del bucket[keys[n % len(keys)]]
        elif kind == "replace":
            bucket[keys[n % len(keys)]] = "z" * (n % 3 * width)
        sibling = {**sibling, "k0": n}
        nb = {"cells": [], "metadata": {"planbook": {"a": sibling, "b": bucket}}}
        expected = json.dumps(nb, indent=indent, sort_keys=sort_keys, ensure_ascii=False)
        assert encoder.encode(nb) == expected + "\n"
        assert "".join(encoder.pieces(nb)) == expected + "\n"
        assert len(encoder._value(nb, 0)) == len(expected)


@settings(max_examples=60, deadline=None)
@given(
    changes_of(replace=(0, 30), replace_last=(0, 0), replace_two=(0, 30), add=(0, 30), same=(0, 0)),
    st.sampled_from([" ", "  "]),
    st.booleans(),
)
def test_an_object_of_long_entries_changed_after_its_head_is_written_as_json_would_write_it(
    changes: list[tuple[str, int]], indent: str, sort_keys: bool
) -> None:
    """An object of 9 to 40 entries kept in pieces (the log's buckets, each long): the next
    one with the same keys takes the last one's pieces before its first changed entry as
    they are. Replaced anywhere (the last one, as the log's, or two), a key added (all put
    together again) or nothing changed but the object, it writes what json.dumps writes."""
    encoder = Encoder(with_fields(JUPYTER, indent=indent, sort_keys=sort_keys))
    buckets: dict[str, Any] = {
        f"{i:04d}": {"at": "t", "detail": "d" * 1500, "n": i} for i in range(12)
    }
    for kind, n in changes:
        buckets = dict(buckets)  # never changed in place, as the store's objects
        keys = list(buckets)
        if kind == "replace":
            buckets[keys[n % len(keys)]] = {"detail": "r" * 1500, "n": n}
        elif kind == "replace last":
            buckets[keys[-1]] = {"detail": "l" * 1500, "more": len(keys)}
        elif kind == "replace two":
            for key in (keys[n % len(keys)], keys[(n * 7 + 3) % len(keys)]):
                buckets[key] = {"detail": "t" * (1500 + n), "n": -n}
        elif kind == "add" and len(buckets) < 40:
            buckets[f"{n:04d}a"] = {"detail": "a" * 1500}
        nb = {"cells": [], "metadata": {"planbook": {"log": buckets}}}
        expected = json.dumps(nb, indent=indent, sort_keys=sort_keys, ensure_ascii=False)
        assert "".join(encoder.pieces(nb)) == expected + "\n"
        assert encoder.encode(nb) == expected + "\n"
        # the length each text is kept with is its own (a Rope's decides what joins it above)
        assert len(encoder._value(nb, 0)) == len(expected)


def test_a_long_log_whose_last_bucket_changed_costs_what_a_short_one_does() -> None:
    """The log's buckets (64 entries each, kept in pieces) past a long history: a save after
    one more entry in the last bucket takes the other buckets' pieces as they were, so it
    runs as many Python lines beside 45 buckets as beside 10 (every bucket's pieces were gone
    through again, about 10 lines each: a staged step beside 1,000 past plans ran 3,537
    lines where beside one it ran 2,569)."""

    def one_more_entry(buckets: int) -> int:
        encoder = Encoder(JUPYTER)
        entry = {"at": "2026-11-27T21:00:00+00:00", "by": "me", "event": "staged", "detail": "x"}
        log = {
            f"{b:04d}": {f"{b * 64 + n:06d}": dict(entry, n=n) for n in range(64)}
            for b in range(buckets - 1)
        }
        last: dict[str, Any] = {}
        for n in range(4):  # the lineage met a few times: its entries are kept from here
            last = {**last, f"{(buckets - 1) * 64 + n:06d}": dict(entry, n=n)}
            log = {**log, f"{buckets - 1:04d}": last}
            encoder.pieces({"cells": [], "metadata": {"planbook": {"log": log}}})
        last = {**last, f"{(buckets - 1) * 64 + 9:06d}": dict(entry, n=9)}
        nb = {"cells": [], "metadata": {"planbook": {"log": {**log, f"{buckets - 1:04d}": last}}}}
        return lines_of_save(encoder, nb)

    few, many = one_more_entry(10), one_more_entry(45)
    assert many - few < 20, (few, many)


def test_a_checkpoint_added_to_its_bucket_encodes_that_checkpoint_alone() -> None:
    """A checkpoints' bucket (up to 64, keyed by random ids) that gains one checkpoint: the
    save encodes that checkpoint, and takes the others' texts as it kept them, so it runs as
    many Python lines beside 60 as beside 10 (every checkpoint's key and text were put
    together again, about 13 lines each, at every step that ran code)."""

    def adding_one(n: int) -> int:
        encoder = Encoder(JUPYTER)
        ids = [f"cp-{i * 7919 % 10007:08x}" for i in range(n + 1)]
        bucket = {k: {"at": "t", "cells": [{"cell_id": k, "source": "s"}]} for k in ids[:n]}
        for version in range(2):  # the lineage met twice: its entries are kept from here
            bucket = {**bucket, "cp-ffffffff": {"version": version}}
            encoder.pieces({"cells": [], "metadata": {"planbook": {"checkpoints": bucket}}})
        bucket = {**bucket, ids[n]: {"at": "t", "cells": []}}
        nb = {"cells": [], "metadata": {"planbook": {"checkpoints": bucket}}}
        return lines_of_save(encoder, nb)

    few, many = adding_one(10), adding_one(60)
    assert many - few < 20, (few, many)


def test_a_log_bucket_that_gains_an_entry_encodes_that_entry_alone() -> None:
    """A save of the log after one more entry encodes that entry and the containers above
    it, not the keys of the bucket's other entries again (a loop of up to 64 at every step)."""
    encoder = Encoder(JUPYTER)
    strings: list[str] = []
    real = encoder._string

    def counting(text: str) -> str:
        strings.append(text)
        return str(real(text))

    encoder._string = counting
    bucket: dict[str, Any] = {}
    for n in range(1, 66):
        bucket = {**bucket, f"{n:06d}": {"at": "t", "by": "me", "event": "staged"}}
        nb = {"cells": [], "metadata": {"planbook": {"log": {"0000": bucket}}}}
        strings.clear()
        text = "".join(encoder.pieces(nb))
        assert text == json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    # the new entry's keys and values, the keys of the containers above; not 64 more keys
    assert len(strings) < 20, strings


@contextmanager
def counted_saves(then: Callable[[], None] = lambda: None) -> Iterator[list[int]]:
    """Count the notebook's durable saves (write, fsync, rename) through the real function;
    ``then`` is called after each."""
    saves: list[int] = []
    real = file_backend.atomic_write

    def counting(path: Path, data: bytes) -> Look:
        seen = real(path, data)
        saves.append(len(data))
        then()
        return seen

    file_backend.atomic_write = counting  # type: ignore[assignment]
    try:
        yield saves
    finally:
        file_backend.atomic_write = real  # type: ignore[assignment]


def test_the_bytes_kept_of_pieces_written_before_stay_within_the_files_size(
    tmp_path: Path,
) -> None:
    """A save looks up each piece's bytes among those it wrote before, and lets go of the
    pieces the file no longer holds only once they add up to the file's size: after 300
    saves, each changing a cell of 20 KB, what it keeps is at most twice the file, and the
    file is what json.dumps writes."""
    path = make_notebook(tmp_path / "n.ipynb", ["x" * 20_000, "b = 2"])
    doc = FileNotebook(path)
    for n in range(300):
        doc.replace_cell(Cell(id="c1", source=f"{n} " + "y" * 20_000))
    size = path.stat().st_size
    kept = doc._encoded_pieces  # private: what a long session holds in memory
    assert sum(map(len, kept.values())) <= 2 * size + 1000, (size, len(kept))
    nb = json.loads(path.read_text())
    assert path.read_text() == json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    assert nb["cells"][0]["source"] == ["299 " + "y" * 20_000]  # a line: a list of one


def test_a_run_of_cell_only_steps_is_one_durable_write_of_the_notebook(tmp_path: Path) -> None:
    """An edit, an insert, a move and a delete: no code runs and no file is written, so the
    approval, every step's checkpoint, change and "done", and the plan leaving "executing"
    reach the disk in one save, and nothing more. Each step is told to listeners once that
    save is on disk."""
    path = make_notebook(tmp_path / "n.ipynb", ["a = 1", "b = 2", "c = 3"])
    session = open_session(path)
    session.propose.edit_cell("c1", "a = 10", reason="r")
    session.propose.insert_cell("d = 4", reason="r")
    session.propose.move_cell("c3", after="c1", reason="r")
    session.propose.delete_cell("c2", reason="r")
    at_step: list[int] = []
    with counted_saves() as saves:
        session.subscribe(lambda e: at_step.append(len(saves)) if e.kind == "step_finished" else 0)
        assert session.approve().ok
    assert at_step == [1, 1, 1, 1]  # told after the one save
    assert len(saves) == 1
    sources = [c.source for c in session.cells()]
    assert sources == ["a = 10", "c = 3", "d = 4"]
    assert open_session(path).cells() == session.cells()  # as the file holds them


def test_a_file_step_is_two_durable_writes_the_checkpoint_before_the_file(
    tmp_path: Path,
) -> None:
    """A file step saves its checkpoint (the file's old bytes) before it writes the file, so a
    crash between the two leaves a change that can be rolled back; then its "done"."""
    path = make_notebook(tmp_path / "n.ipynb", ["a = 1"])
    (tmp_path / "data.txt").write_text("old\n")
    session = open_session(path)
    session.propose.write_file("data.txt", "new\n", reason="r")
    on_disk: list[str] = []  # the file's text at each save of the notebook
    with counted_saves(lambda: on_disk.append((tmp_path / "data.txt").read_text())) as saves:
        assert session.approve().ok
    # the approval with the checkpoint (file still old), then "done" with the run's end
    assert on_disk == ["old\n", "new\n"]
    assert len(saves) == 2


@pytest.mark.kernel
def test_a_step_that_runs_code_is_one_durable_write_before_its_code(
    tmp_path: Path,
) -> None:
    """A step with code is saved "running" (with its checkpoint, and what was done before it)
    before its code runs, so a crash never runs it twice; its outputs and "done" travel with
    the next save (the next code step's, or the run's end): one save a code step and one at
    the end, the least that guarantee allows. The code itself reads the file and finds its
    step running and the edit before it done."""
    make_notebook(tmp_path / "n.ipynb", ["x = 1", "y = 2"])
    reads_its_record = (
        "import json\n"
        "meta = json.load(open('n.ipynb'))['metadata']['planbook']\n"
        "plan = next(iter(meta['plans'].values()))\n"
        "print([s['status'] for s in plan['revisions'][-1]['steps']])"
    )
    with kernel(tmp_path) as k:
        reply = k.run(
            "import planbook\n"
            "from planbook.documents import file as backend\n"
            "saves, real = [], backend.atomic_write\n"
            "backend.atomic_write = lambda p, d: (real(p, d), saves.append(len(d)))[0]\n"
            "s = planbook.session(notebook='n.ipynb', live=False)\n"
            "s.propose.edit_cell('c1', 'x = 10', reason='r')\n"
            f"s.propose.edit_cell('c2', {reads_its_record!r}, reason='r', run=True)\n"
            "s.propose.run_cell('c1', reason='r')\n"
            "at = []\n"
            "del saves[:]  # staging saved the plan: count the run's saves\n"
            "s.subscribe(lambda e: at.append(len(saves)) if e.kind == 'step_finished' else 0)\n"
            "ok = s.approve().ok\n"
            "import json as j\n"
            "print(j.dumps({'ok': ok, 'at': at, 'saves': len(saves)}))"
        )
    assert reply.status == "ok", reply.text
    counted = json.loads(reply.stdout.strip().splitlines()[-1])
    assert counted["ok"], reply.text
    # the approval and the edit with "edit and run"'s running (1); its outputs with the
    # run's running (2); that run's outputs with the run's end (3)
    assert counted["at"] == [1, 2, 3] and counted["saves"] == 3, counted
    outputs = json.loads((tmp_path / "n.ipynb").read_text())["cells"][1]["outputs"]
    assert outputs[0]["text"] == ["['done', 'running', 'approved']\n"], outputs


def test_an_approved_step_reads_the_notebook_file_no_more_than_it_saves_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether someone else changed the file is told by one stat (documents/file_stat.py): the
    whole file is read again only when the last look was racy (a change in the clock tick of
    planbook's own save could hide from stat), at most once per save; on a file system that
    stamps changes fine-grained (Linux 6.13+) never."""
    path = make_notebook(tmp_path / "n.ipynb", [f"v{i} = {i}" for i in range(20)])
    session = open_session(path)
    session.propose.edit_cell("c1", "v = 1", reason="r")
    session.propose.edit_cell("c2", "v = 2", reason="r")
    reads: list[Path] = []
    real = Path.read_bytes

    def counting(self: Path) -> bytes:
        reads.append(self)
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", counting)
    with counted_saves() as saves:
        assert session.approve().ok
    assert len(saves) == 1
    assert len([p for p in reads if p == path]) <= len(saves)
    # and a change by someone else is still seen at once
    monkeypatch.setattr(Path, "read_bytes", real)
    path.write_text(path.read_text().replace('"v = 2"', '"v = 9"'))
    assert session.cells()[1].source == "v = 9"


def lines_of_save(encoder: Encoder, nb: dict[str, Any]) -> int:
    """Python lines ``encoder`` runs to save ``nb``, which it writes as json.dumps would."""
    lines = lines_of(lambda: encoder.pieces(nb))
    expected = json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    assert "".join(encoder.pieces(nb)) == expected
    return lines


def lines_of(call: Callable[[], object]) -> int:
    """Python lines ``call`` executes in this thread."""
    count = [0]

    def lines(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            count[0] += 1
        return lines

    sys.settrace(lambda frame, event, arg: lines)
    try:
        call()
    finally:
        sys.settrace(None)
    return count[0]


def comparisons_of(call: Callable[[], object]) -> int:
    """Objects ``call`` compares by identity in C (``identity_comparisons``)."""
    count = [0]

    def tally() -> None:
        count[0] += 1

    with identity_comparisons(tally):
        call()
    return count[0]


@pytest.mark.parametrize("by", ["id", "position"])
def test_staging_a_step_costs_the_same_on_2000_cells_as_on_20(tmp_path: Path, by: str) -> None:
    """Staging reads the cells' ids, types and sources (``NotebookDocument.outline``), not a
    copy of every cell: before, each staged step converted and copied all 2,000 cells (about
    33,000 Python calls) and cost 7 times a durable save of the notebook."""
    costs = []
    for cells in (20, 2000):
        path = make_notebook(tmp_path / f"n{cells}.ipynb", [f"v{i} = {i}" for i in range(cells)])
        session = open_session(path)
        ids = [c.id for c in session.cells()]
        for k in range(3):  # the projection is built once, then extended
            session.propose.edit_cell(ids[k], f"v = {k}", reason="r")
        token = ids[7] if by == "id" else "#8"
        stage = session.propose.edit_cell
        costs.append(lines_of(lambda s=stage, t=token: s(t, "v = 7", reason="r")))  # type: ignore[misc]
        assert session.current_plan().steps[-1].operation.cell_id == ids[7]  # type: ignore[union-attr]
    small, large = costs
    assert large - small < 100, costs


@pytest.mark.parametrize("by", ["id", "position"])
def test_staging_step_1000_runs_the_lines_step_100_runs(tmp_path: Path, by: str) -> None:
    """Steps 138 and 1,034 of one plan sit at the same place of their log bucket (64 to a
    bucket), so staging them does the same but for the plan behind them: each proposal looked
    at every step three times (the same change staged already? a cell being deleted?) and
    the projection's cache read every step's status (before: 5,700 lines at step 138, 22,900
    at step 1,034)."""
    path = make_notebook(tmp_path / "n.ipynb", [f"v{i} = {i}" for i in range(10)])
    session = open_session(path)
    ids = [c.id for c in session.cells()]
    costs, compared = {}, {}
    for k in range(1036):
        token = ids[k % 10] if by == "id" else f"#{k % 10 + 1}"
        stage = session.propose.edit_cell
        if k in (138, 1034):
            costs[k] = lines_of(lambda s=stage, t=token, k=k: s(t, f"v = {k}", reason="r"))  # type: ignore[misc]
        elif k in (139, 1035):
            compared[k] = comparisons_of(lambda s=stage, t=token, k=k: s(t, f"v = {k}", reason="r"))  # type: ignore[misc]
        else:
            stage(token, f"v = {k}", reason="r")
    assert len(session.current_plan().steps) == 1036  # type: ignore[union-attr]
    assert costs[1034] - costs[138] < 400, costs
    # four looks at every step seen before (the projection, the open steps, the plan's dumps,
    # the serializer) compared 4,100 steps at step 1,035, 2,060 at 500: now each asks the
    # list whether it only grew since (``Prefix``, ``Appended``)
    assert compared[1035] - compared[139] < 50, compared


def test_a_long_plan_is_saved_in_a_few_pieces_of_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A save writes the file's text as the serializer's pieces, gathered (writev); a plan's
    steps were two pieces each, so a save listed, compared and wrote two more pieces per
    staged step. Short items are now joined into pieces of about 32 KB, and the file reads back
    as the plan it holds."""
    path = make_notebook(tmp_path / "n.ipynb", [f"v{i} = {i}" for i in range(10)])
    session = open_session(path)
    written: list[int] = []
    real = file_backend._write_all

    def counting(fd: int, chunks: list[Any]) -> None:
        written.append(len(chunks))
        real(fd, chunks)

    monkeypatch.setattr(file_backend, "_write_all", counting)
    for k in range(600):
        session.propose.edit_cell(f"c{k % 10 + 1}", f"v = {k}", reason="r")
    at_100, at_600 = written[99], written[-1]
    # a piece per 32 KB of steps, two per log bucket of 64 entries (was 1,200 at step 600)
    assert at_600 - at_100 < 60, (at_100, at_600)
    saved = json.loads(path.read_text())["metadata"]["planbook"]["plans"]
    (plan,) = saved.values()
    steps = plan["revisions"][-1]["steps"]
    assert [s["operation"]["source"] for s in steps] == [f"v = {k}" for k in range(600)]


def test_the_text_of_a_plan_reads_the_cells_outline_not_a_copy_of_each(tmp_path: Path) -> None:
    """The text of a plan reads each cell's id, type and source (``outline``): it copied every
    cell (a pydantic copy each, about 40 lines of Python a cell: 84,600 lines for a 10-step
    plan on 2,000 cells, 3,500 on 20). What is left per cell is the projection's own list and
    the cells' short names, a dozen lines."""
    costs = []
    for cells in (20, 2000):
        path = make_notebook(tmp_path / f"n{cells}.ipynb", [f"v{i} = {i}" for i in range(cells)])
        session = open_session(path)
        for k in range(10):
            session.propose.edit_cell(f"c{k + 1}", f"v = {k}", reason="r")
        assert "v = 9" in session.render_text()
        costs.append(lines_of(session.render_text))
    small, large = costs
    assert large - small < 15 * 2000, costs


def test_a_save_during_a_run_looks_again_at_the_steps_assigned_to_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A save during a run wrote the steps whose status changed: it compared every step of
    the revision with its last dump (a status was assigned since), 300 looks per save on a
    300-step plan. The steps assigned to since the last save are now told by the steps
    (``ASSIGNMENTS``), and the file holds every status as it is."""
    path = make_notebook(tmp_path / "n.ipynb", [f"v{i} = {i}" for i in range(10)])
    session = open_session(path)
    for k in range(300):
        session.propose.edit_cell(f"c{k % 10 + 1}", f"v = {k}", reason="r")
    looks = [0]
    real = PlanDumps._part

    def counting(self: PlanDumps, part: Any) -> Any:
        looks[0] += 1
        return real(self, part)

    monkeypatch.setattr(PlanDumps, "_part", counting)
    with counted_saves() as saves:
        assert session.approve(first=5).ok
    assert looks[0] < 20 * len(saves), (looks[0], len(saves))
    saved = json.loads(path.read_text())["metadata"]["planbook"]["plans"]
    (plan,) = saved.values()
    statuses = [s["status"] for s in plan["revisions"][-1]["steps"]]
    assert statuses == ["done"] * 5 + ["pending"] * 295


def fresh_text_per_save(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The characters of text each save makes afresh from now on: its pieces that are not
    the very strings of the save before (appended to the list returned, a save at a time)."""
    fresh: list[int] = []
    last: list[str] = []
    real = Encoder.pieces

    def counting(self: Encoder, nb: dict[str, Any]) -> list[str]:
        pieces = real(self, nb)
        before = set(map(id, last))
        fresh.append(sum(len(p) for p in pieces if id(p) not in before))
        last[:] = pieces  # held: an id is not reused while the next save compares
        return pieces

    monkeypatch.setattr(Encoder, "pieces", counting)
    return fresh


def test_a_save_makes_afresh_the_text_that_changed_not_the_log_behind_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A save's pieces of text are the very strings of the last save where nothing changed;
    what is made afresh (copied, then hashed and compared to find its bytes) is the change:
    the new step, the log's last bucket, the runs of text around them. Each of the log's
    full buckets (about 10 KB) was copied behind its key at every save, so a staged step
    made 88 KB more text at step 612 than at step 100 (the same place of their log bucket)."""
    path = make_notebook(tmp_path / "n.ipynb", [f"v{i} = {i}" for i in range(10)])
    session = open_session(path)
    fresh = fresh_text_per_save(monkeypatch)
    for k in range(100 + 8 * BUCKET + 1):
        session.propose.edit_cell(f"c{k % 10 + 1}", f"v = {k}", reason="r")
    early, late = fresh[100], fresh[100 + 8 * BUCKET]
    # The plan's steps end in a run of short text joined again as each step is added (up to
    # GROWN_PIECE, then a new run starts): bounded, whatever the plan's length, but the two
    # steps may be at different points of that cycle.
    assert late - early < 8_000 + GROWN_PIECE, (early, late)
    assert path.stat().st_size > 300_000  # the record is long: most of it was not made again


def test_a_staged_step_adds_its_own_fields_to_the_file_not_its_defaults(tmp_path: Path) -> None:
    """What a staged step adds to the notebook file, which every later save writes again: its
    step without the fields at their defaults (``plan_dumps.stored_step``) and its log entry.
    With those fields (``"error": null``, ``"run_by": null``...) it was 660 bytes here."""
    path = make_notebook(tmp_path / "n.ipynb", [f"v{i} = {i}" for i in range(10)])
    session = open_session(path)
    sizes = []
    for k in range(100 + BUCKET):
        if k in (100, 100 + BUCKET - 1):
            sizes.append(path.stat().st_size)
        session.propose.edit_cell(f"c{k % 10 + 1}", f"v = {k}", reason="bench")
    per_step = (sizes[1] - sizes[0]) / (BUCKET - 1)
    assert per_step < 600, per_step  # 547 here (the log names the user: a few bytes more or less)
    (plan,) = json.loads(path.read_text())["metadata"]["planbook"]["plans"].values()
    assert all("run_by" not in s for s in plan["revisions"][-1]["steps"])


#: JSON trees as the notebook's are: dicts and lists of scalars, some deeper than the cache.
JSON_TREE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3)
    ),
    max_leaves=40,
)


def _replaced(tree: Any, path: list[int], new: Any) -> Any:
    """``tree`` with the value at ``path`` (each a choice among a container's children) now
    ``new``, new containers along the path and none changed in place, as the store does."""
    if not path or not isinstance(tree, dict | list) or not tree:
        return new
    keys = list(tree) if isinstance(tree, dict) else list(range(len(tree)))
    key = keys[path[0] % len(keys)]
    copy = dict(tree) if isinstance(tree, dict) else list(tree)
    copy[key] = _replaced(tree[key], path[1:], new)
    return copy


def _containers_held(nb: Any, deepest: int) -> set[int]:
    """The ids of the containers ``nb`` holds from depth 1 to ``deepest``."""
    held: set[int] = set()
    stack = [(nb, 0)]
    while stack:
        value, depth = stack.pop()
        if depth:
            held.add(id(value))
        if depth < deepest:
            children = value.values() if isinstance(value, dict) else value
            stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return held


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(st.lists(st.integers(0, 5), min_size=1, max_size=12), JSON_TREE, st.booleans()),
        min_size=1,
        max_size=10,
    ),
    st.integers(0, 10),
)
def test_the_encoders_cache_forgets_exactly_what_the_notebook_no_longer_holds(
    changes: list[tuple[list[int], Any, bool]], nested: int
) -> None:
    """After a pruning the serializer keeps the text of every container the notebook holds
    down to its cache's depth and of nothing else (a container replaced is released, not
    kept alive by the cache), and the next saves write what json.dumps writes: anything
    replaced anywhere, and a long list and a long object that grow (a plan's steps, the
    log's bucket), whose text is kept across a pruning while the notebook holds them."""
    from planbook.documents.serializer import _CACHE_DEPTH

    deep: Any = {"leaf": [1, {"x": "y"}]}
    for _ in range(nested):  # a branch deeper than the cache, as a cell's nested metadata
        deep = {"d": [deep]}
    steps = [{"n": i} for i in range(40)]
    log = {f"{i:04d}": {"e": i} for i in range(40)}
    nb: Any = {
        "cells": [{"id": "a", "source": "s", "deep": deep}],
        "metadata": {"m": [[]], "planbook": {"steps": steps, "log": log}},
    }
    encoder = Encoder(JUPYTER)

    def written() -> str:
        return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"

    for path, new, grow in changes:
        assert "".join(encoder.pieces(nb)) == written()
        encoder._prune(nb)
        held = _containers_held(nb, _CACHE_DEPTH)
        assert set(encoder._cache) == held
        kept = [*encoder._lists.values(), *encoder._dicts.values()]
        assert {id(entry[0]) for entry in kept} <= held
        nb = _replaced(nb, path, new)
        record = nb["metadata"].get("planbook") if isinstance(nb.get("metadata"), dict) else None
        if grow and isinstance(record, dict) and isinstance(record.get("steps"), list):
            n = len(record["steps"])
            record = {**record, "steps": [*record["steps"], {"n": n}]}
            if isinstance(record.get("log"), dict):
                record["log"] = {**record["log"], f"{9000 + n:04d}": {"e": n}}
            nb = {**nb, "metadata": {**nb["metadata"], "planbook": record}}
    assert encoder.encode(nb) == written()


def test_a_staged_step_costs_about_the_same_beside_100_past_plans_as_beside_one(
    tmp_path: Path,
) -> None:
    """A notebook keeps every plan it ran (``keep_plans`` is unset by default), and each save
    dumped every plan and encoded the notebook's plans entry by entry: beside 100 past plans
    a staged step ran about 13,700 more lines of Python than beside one (2.3 ms of CPU
    against 0.8). Past plans are now dumped again only when something in them changed, and the
    plans' text is put together from blocks of entries kept while they hold the same plans."""
    costs = []
    for past in (1, 100):
        path = make_notebook(tmp_path / f"n{past}.ipynb", [f"v{i} = {i}" for i in range(10)])
        session = open_session(path)
        for k in range(past):
            session.propose.edit_cell(f"c{k % 10 + 1}", f"v = {k}", reason="r")
            assert session.approve().ok
        assert len(session.store.state.plans) == past
        for k in range(3):  # the plan being staged: past its first steps
            session.propose.edit_cell(f"c{k % 10 + 1}", f"w = {k}", reason="r")

        def stage(k: int, session: Session = session) -> None:
            session.propose.edit_cell("c1", f"x = {k}", reason="r")

        costs.append(min(lines_of(lambda k=k: stage(k)) for k in range(3)))
        saved = json.loads(path.read_text())["metadata"]["planbook"]["plans"]
        assert len(saved) == past + 1  # every plan is still written
    one, hundred = costs
    # 137 more lines a past plan before; 27 with a look at each plan's fields and lists;
    # about 7 now that plans tell what changed in them (model/tracked.py): what is left is
    # the plans' text put together again around the one that changed (its block of entries)
    assert hundred - one < 10 * 100, costs


#: What changes a plan after it was saved, as the engine changes it: in place.
PLAN_CHANGES = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "status",
                "error",
                "state",
                "approve",
                "result",
                "drop result",
                "revise",
                "add step",
                "reorder",
                "new plan",
                "drop plan",
                "nothing",
                "ask",
                "answer",
                "summary",
                "task",
                "insert step",
                "drop step",
                "sort",
                "results replaced",
                "untracked",
                "many",
                "extend",
                "last step replaced",
                "result taken back and another added",
                "status and add step",
            ]
        ),
        st.integers(0, 50),
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=80, deadline=None)
@given(PLAN_CHANGES)
# a plan's shallow copy takes its place, and a step they share changes: hypothesis found it
@example([("untracked", 0), ("results replaced", 0), ("status", 0)])
def test_a_saved_plan_is_dumped_again_whatever_changed_in_it(
    changes: list[tuple[str, int]],
) -> None:
    """A plan's dump is reused while nothing in the plan changed (a notebook keeps every plan
    it ran, and each save dumped all of them). Whatever changes, in any plan, between two
    saves (a step's status or error, the plan's state, an approval or a result added or
    taken back, a new revision, a step added, dropped or the steps reordered in place, a
    question asked or answered, a revision's summary, the plan's task, a list replaced or
    one set without validation, plans added or dropped, more changes than the journal of
    changes keeps), every plan's dump is what dumping it afresh gives; and the serializer,
    told by the dumps which lists only grew at their end (``Appended``: it takes their text
    without a look at the items they share), writes them as json.dumps does."""
    from planbook.model.operations import EditCell
    from planbook.model.plan import Approval, AskFirst, Plan, Revision, Step, StepResult

    def step(n: int) -> Step:
        return Step(operation=EditCell(cell_id=f"c{n}", source=f"v = {n}"), base="absent")

    # the first plan's steps and results are long enough for the serializer to reuse their
    # text when they grow (``_GROWN_MIN``)
    plans = [
        Plan(revisions=[Revision(number=1, steps=[step(i) for i in range(k)])]) for k in (34, 3, 3)
    ]
    plans[0].results.extend(StepResult(step_id=f"r{i}", status="done") for i in range(33))
    dumps = PlanDumps()
    encoder = Encoder()

    def saved_as_json_would_write_it() -> bool:
        nb = {"cells": [], "metadata": {"planbook": {"plans": dumps.plans(plans)}}}
        return encoder.encode(nb) == json.dumps(nb, indent=1, sort_keys=True) + "\n"

    assert dumps.plans(plans) == [PlanDumps().plan(p) for p in plans]
    assert saved_as_json_would_write_it()
    for kind, n in changes:
        plan = plans[n % len(plans)] if plans else None
        steps = plan.revisions[-1].steps if plan is not None else []
        if kind == "new plan" or plan is None:
            plans.append(Plan(revisions=[Revision(number=1, steps=[step(n)])]))
        elif kind == "status" and steps:
            steps[n % len(steps)].status = ("approved", "running", "done", "failed")[n % 4]
        elif kind == "error" and steps:
            steps[n % len(steps)].error = f"error {n}"
        elif kind == "state":
            plan.state = ("reviewing", "executing", "completed", "cancelled")[n % 4]
        elif kind == "approve":
            ids = tuple(s.id for s in steps)
            plan.approvals.append(Approval(revision=len(plan.revisions), step_ids=ids, sha256="h"))
        elif kind == "result" and steps:
            plan.results.append(StepResult(step_id=steps[n % len(steps)].id, status="done"))
        elif kind == "drop result" and plan.results:
            plan.results.pop()
        elif kind == "revise":
            copies = [s.model_copy(deep=True) for s in steps]
            plan.revisions.append(Revision(number=len(plan.revisions) + 1, steps=copies))
        elif kind == "add step":
            steps.append(step(n))
        elif kind == "reorder" and len(steps) > 1:
            steps[:] = [*steps[1:], steps[0]]
        elif kind == "drop plan" and len(plans) > 1:
            plans.remove(plan)
        elif kind == "ask" and steps:
            steps[n % len(steps)].ask_first = AskFirst(question=f"q{n}", options=["stop here"])
        elif kind == "answer" and steps and (asked := steps[n % len(steps)].ask_first):
            steps[n % len(steps)].ask_first = asked.model_copy(update={"answer": "stop here"})
        elif kind == "summary":
            plan.revisions[-1].summary = f"summary {n}"
        elif kind == "task":
            plan.task = f"task {n}"
        elif kind == "insert step":
            steps.insert(n % (len(steps) + 1), step(n))
        elif kind == "drop step" and steps:
            del steps[n % len(steps)]
        elif kind == "sort":
            steps.sort(key=lambda s: s.operation.source, reverse=bool(n % 2))  # type: ignore[union-attr]
        elif kind == "results replaced":
            plan.results = [StepResult(step_id=f"s{n}", status="failed")]
        elif kind == "untracked":  # a list set without validation: it does not note changes
            copy = plan.model_copy(update={"results": [*plan.results]})
            plans[plans.index(plan)] = copy
            copy.results.append(StepResult(step_id=f"u{n}", status="done"))
        elif kind == "many":  # more changes than the journals keep
            for k in range(1100):
                plan.results.append(StepResult(step_id=f"m{k}", status="done"))
                plan.results.pop()
            plan.task = f"many {n}"
        elif kind == "extend":
            steps += [step(n), step(n + 1)]
        elif kind == "status and add step" and steps:  # both before one save
            steps[n % len(steps)].status = "skipped"
            steps.append(step(n))
        elif kind == "last step replaced" and steps:
            steps[-1] = step(n)
        elif kind == "result taken back and another added" and plan.results:
            plan.results.pop()
            plan.results.append(StepResult(step_id=f"again {n}", status="failed"))
        assert dumps.plans(plans) == [PlanDumps().plan(p) for p in plans], kind
        assert saved_as_json_would_write_it(), kind


@settings(max_examples=80, deadline=None)
@given(
    changes_of(
        replace=(0, 400),
        replace_at_an_end=(0, 1),
        replace_several=(2, 40),
        insert=(0, 400),
        drop=(0, 400),
        reorder=(1, 99),
        prune=(0, 1),
    ),
    st.sampled_from([" ", "  "]),
    st.booleans(),
    st.sampled_from([10, 3000, 9000]),
)
def test_a_long_object_changed_anywhere_is_written_as_json_would_write_it(
    changes: list[tuple[str, int]], indent: str, sort_keys: bool, width: int
) -> None:
    """An object of many entries (a notebook's plans, its blobs) is put together from blocks
    of entries kept while they hold the same keys and values: an entry replaced, inserted or
    dropped anywhere, several replaced in blocks far apart, the same entries in another order
    of their own, keys sorted or in their own order, with the encoder's cache pruned between
    saves, it writes what json.dumps writes (entries of 3,000 characters are joined into
    runs, of 9,000 stay pieces of their own, as a blob's)."""
    encoder = Encoder(with_fields(JUPYTER, indent=indent, sort_keys=sort_keys))
    entries: dict[str, Any] = {
        f"k{(i * 7919) % 1000:04d}": {"n": i, "text": "p" * width} if i % 3 else "b" * width
        for i in range(100)
    }
    for kind, n in changes:
        entries = dict(entries)  # never changed in place, as the store's objects
        keys = list(entries)
        if kind == "replace":
            entries[keys[n % len(keys)]] = {"replaced": n, "text": "r" * (width // 2)}
        elif kind == "replace at an end":  # the first or the last in the file's order
            at = (sorted(keys) if sort_keys else keys)[-n]
            entries[at] = {"at an end": n, "text": "e" * (width // 3)}
        elif kind == "replace several":  # in blocks far apart, first or last among them
            for k in range(0, len(keys), max(1, len(keys) // n)):
                entries[keys[k]] = {"several": n, "at": k}
        elif kind == "insert":
            entries[f"k{n:04d}x"] = {"inserted": n}
        elif kind == "reorder":  # the same keys and values in another order of their own
            entries = {k: entries[k] for k in keys[n % len(keys) :] + keys[: n % len(keys)]}
        elif kind == "drop" and len(entries) > 1:
            del entries[keys[n % len(keys)]]
        nb = {"cells": [], "metadata": {"planbook": {"plans": entries}}}
        expected = json.dumps(nb, indent=indent, sort_keys=sort_keys, ensure_ascii=False) + "\n"
        assert "".join(encoder.pieces(nb)) == expected
        # the length each text is kept with is its own (a Rope's decides what joins it above)
        text = encoder._value(nb, 0)
        assert len(text) == len(expected) - 1
        if kind == "prune":
            encoder._prune(nb)


@settings(max_examples=80, deadline=None)
@given(
    changes_of(
        replace=(0, 400),
        set_inside=(0, 400),
        insert=(0, 400),
        drop=(0, 400),
        drop_missing=(0, 400),
        two_at_once=(0, 400),
        two_saves_apart=(0, 400),
        back_to_an_older_tree=(0, 5),
    ),
    st.booleans(),
)
def test_a_long_object_copied_with_entries_set_is_written_as_json_would_write_it(
    changes: list[tuple[str, int]], sort_keys: bool
) -> None:
    """The record's long objects (the plans) change through ``apply_metadata_changes``,
    which copies each and says which entries it set (``Replaced``), and the serializer takes
    its word instead of comparing the values: an entry replaced or changed inside, added,
    dropped, dropped when absent, two set at once, two saves made before one encoding, a
    tree from before written again (a transaction that failed): it writes what json.dumps
    writes."""
    encoder = Encoder(with_fields(JUPYTER, sort_keys=sort_keys))
    record: dict[str, Any] = {
        "plans": {f"p{(i * 7919) % 1000:04d}": {"n": i, "status": "done"} for i in range(100)},
        "mode": "plan",
    }
    trees = [record]
    for kind, n in changes:
        keys = list(record["plans"])
        key = keys[n % len(keys)]
        if kind == "replace":
            record = apply_metadata_changes(record, {("plans", key): {"replaced": n}})
        elif kind == "set inside":
            record = apply_metadata_changes(record, {("plans", key, "status"): f"s{n}"})
        elif kind == "insert":
            record = apply_metadata_changes(record, {("plans", f"p{n:04d}x"): {"new": n}})
        elif kind == "drop" and len(keys) > 1:
            record = apply_metadata_changes(record, {("plans", key): DELETE})
        elif kind == "drop missing":
            record = apply_metadata_changes(record, {("plans", "absent"): DELETE})
        elif kind == "two at once":
            other = keys[(n * 31) % len(keys)]
            record = apply_metadata_changes(
                record, {("plans", key): {"a": n}, ("plans", other, "status"): "b"}
            )
        elif kind == "two saves apart":  # the serializer sees only the second
            record = apply_metadata_changes(record, {("plans", key): {"first": n}})
            record = apply_metadata_changes(record, {("plans", keys[-1]): {"second": n}})
        elif kind == "back to an older tree":
            record = trees[-1 - n % len(trees)]
        trees.append(record)
        nb = {"cells": [], "metadata": {"planbook": record}}
        expected = json.dumps(nb, indent=1, sort_keys=sort_keys, ensure_ascii=False) + "\n"
        assert "".join(encoder.pieces(nb)) == expected, kind


def test_a_save_beside_1000_plans_compares_none_of_them() -> None:
    """A save copies the plans' object and sets the plan that changed; the serializer found
    which by comparing the 1,000 values with the last save's, in C (about 34 µs a save,
    growing with every plan run). The copy says which (``Replaced``), and its copies do not
    hold the objects before them."""
    encoder = Encoder()
    record: dict[str, Any] = {"plans": {f"p{i:04d}": {"n": i} for i in range(1000)}}
    first = record["plans"]
    for n in range(3):
        record = apply_metadata_changes(record, {("plans", f"p{n * 300:04d}"): {"n": -n}})
        nb = {"cells": [], "metadata": {"planbook": record}}
        compared = comparisons_of(lambda nb=nb: encoder.pieces(nb))  # type: ignore[misc]
        assert compared < 50, compared  # was 1,000 and more
        expected = json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
        assert "".join(encoder.pieces(nb)) == expected
    copied = record["plans"]
    assert type(copied) is Replaced and copied.replaced == {"p0600"}
    assert type(copied.base) is Replaced and copied.base.base is None  # the chain is cut
    assert type(first) is dict
    assert type(copy.deepcopy(copied)) is dict and pickle.loads(pickle.dumps(copied)) == copied


def test_a_long_log_is_not_joined_again_at_every_save(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Beside a log of more than 64 buckets (its object is put together from blocks), the
    bucket that gains an entry at every step is a block of its own: a save makes afresh
    that bucket's text and the runs around the new step, not the full buckets of its block
    before it (up to 15 of them, about 140 KB of text again at every save)."""
    path = make_notebook(tmp_path / "n.ipynb", [f"v{i} = {i}" for i in range(10)])
    session = open_session(path)
    with session.document.transaction():
        session.store.sync()
        for i in range(70 * BUCKET):
            session.store.log("note", f"entry {i} " + "x" * 40)
        session.store.save()
    fresh = fresh_text_per_save(monkeypatch)
    for k in range(6):
        session.propose.edit_cell(f"c{k % 10 + 1}", f"v = {k}", reason="r")
    saved = json.loads(path.read_text())["metadata"]["planbook"]["log"]
    assert len(saved) > 70  # the buckets, all written
    # a bucket (up to 64 entries, about 11 KB) and the runs around the new step: 2 to 4 KB
    # here; the block of buckets before it made 71 KB again at every save
    assert max(fresh[2:]) < 16_000, fresh


def test_what_plans_dropped_by_gc_held_is_let_go_at_the_next_save(tmp_path: Path) -> None:
    """A save keeps the dumps of every plan's parts between saves, and which plan holds each
    part; the parts of the plans ``gc`` dropped are forgotten at the next save, not kept until
    the notebook grows twice as big again."""
    path = make_notebook(tmp_path / "n.ipynb", [f"v{i} = {i}" for i in range(10)])
    session = open_session(path)
    for k in range(60):
        session.propose.edit_cell(f"c{k % 10 + 1}", f"v = {k}", reason="r")
        assert session.approve().ok
    dumps = session.store._saved.dumps
    before = len(dumps._owner), len(dumps._parts)
    session.gc(keep_plans=1)
    session.propose.edit_cell("c1", "x = 1", reason="r")
    after = len(dumps._owner), len(dumps._parts)
    assert len(session.store.state.plans) == 2
    assert after[0] < 20 < before[0] and after[1] < 20 < before[1], (before, after)


class _EditsTheNextCell:
    """A code step's run that also changes the next step's cell, as someone editing it
    while the code ran would: the next step then meets a changed cell (a conflict)."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def run(self, source: str) -> CellRun:
        found = self.session.executor.document.find_cell("c2")
        assert found is not None
        self.session.executor.document.replace_cell(
            found.cell.model_copy(update={"source": "y = 'theirs'"})
        )
        return CellRun(
            outputs=[{"output_type": "stream", "name": "stdout", "text": "ran\n"}],
            execution_count=1,
        )


def test_a_code_steps_result_waits_for_the_next_save_and_survives_its_failure(
    tmp_path: Path,
) -> None:
    """A step that runs code records its result in memory: the next save carries it into the
    same write, so the record's changes are made once for the step, not at its end too.
    The next step meets a cell changed while the code ran, a conflict raised before any
    save: the file still says the code step done, with its result and outputs, and the next
    one a conflict (the failure reads the record again and puts the waiting result back)."""
    from planbook.engine import store as store_module

    path = make_notebook(tmp_path / "n.ipynb", ["x = 1", "y = 2", "z = 3"])
    session = open_session(path)
    session.executor.runner = lambda: _EditsTheNextCell(session)
    session.propose.run_cell("c1", reason="r")
    session.propose.edit_cell("c2", "y = 20", reason="r")
    changes = store_module._Saved.changes
    made: list[int] = []

    def counted(saved: Any, state: Any) -> Any:
        made.append(1)
        return changes(saved, state)

    store_module._Saved.changes = counted  # type: ignore[method-assign]
    try:
        report = session.approve()
    finally:
        store_module._Saved.changes = changes  # type: ignore[method-assign]
    assert not report.ok
    reader = open_session(path)
    plan = reader.store.state.plans[-1]
    assert [s.status for s in plan.steps] == ["done", "conflict"]
    assert [r.status for r in plan.results] == ["done", "conflict"]
    saved = json.loads(path.read_text())
    assert saved["cells"][0]["outputs"][0]["text"] == ["ran\n"]
    assert "".join(saved["cells"][1]["source"]) == "y = 'theirs'"
    # the record's changes: step 1 "running" with its checkpoint, the edit of c2 made while
    # it ran, step 2's conflict with step 1's result, the run's end (and none at step 1's end)
    assert len(made) == 4, made
