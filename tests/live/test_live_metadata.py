"""Planbook metadata by part in the shared document (issue 10 item 8): each plan and checkpoint
is a key of its own, an update carries only what changed, and whole values written by an older
planbook or by JupyterLab's metadata editor still read back and can be changed by part."""

from __future__ import annotations

import json
from typing import Any

import pytest

from planbook.documents.base import DELETE
from planbook.documents.live.document import LiveNotebook
from tests.live.conftest import on_disk
from tests.live.yclient import YClient
from tests.support.jupyter_server import RunningServer

pytestmark = pytest.mark.server


def _plan(n: int) -> dict[str, Any]:
    return {
        "id": f"p-{n}",
        "task": f"task {n}",
        "steps": [{"n": i, "src": "x" * 40} for i in range(5)],
    }


def test_parts_round_trip_to_the_other_client_and_the_file(
    server: RunningServer, notebook: str, live: LiveNotebook, other: YClient
) -> None:
    live.update_metadata(
        "planbook",
        {("schema_version",): 1, ("plans", "p-1"): _plan(1), ("checkpoints", "cp-1"): {"seq": 1}},
    )
    live.update_metadata("planbook", {("plans", "p-2"): _plan(2), ("checkpoints", "cp-1"): DELETE})
    want = {"schema_version": 1, "plans": {"p-1": _plan(1), "p-2": _plan(2)}, "checkpoints": {}}
    assert live.get_metadata("planbook") == want
    assert other.wait_for(lambda o: o.metadata().get("planbook") == want)
    assert live.make_durable() == ""
    assert on_disk(server, notebook)["metadata"]["planbook"] == want
    # deleting below an entry that does not exist changes nothing
    live.update_metadata("planbook", {("blobs", "abc", "x"): DELETE})
    assert live.get_metadata("planbook") == want


def test_an_update_carries_only_the_changed_part(live: LiveNotebook, other: YClient) -> None:
    live.update_metadata("planbook", {("plans", f"p-{n}"): _plan(n) for n in range(60)})
    assert other.wait_for(lambda o: len(o.metadata().get("planbook", {}).get("plans", {})) == 60)
    sizes: list[int] = []
    subscription = other.doc.observe(lambda event: sizes.append(len(event.update)))
    try:
        live.update_metadata(
            "planbook",
            {
                (
                    "plans",
                    "p-7",
                ): _plan(1000)
            },
        )
        assert other.wait_for(lambda o: o.metadata()["planbook"]["plans"]["p-7"]["id"] == "p-1000")
    finally:
        other.doc.unobserve(subscription)
    one_plan = len(json.dumps(_plan(1000)))
    whole = len(json.dumps(live.get_metadata("planbook")))
    assert sizes and max(sizes) < 2 * one_plan + 200, (sizes, one_plan, whole)
    assert whole > 30 * one_plan  # so a whole-value write would have been far larger


def test_a_whole_value_from_jupyterlab_reads_back_and_is_changed_by_part(
    server: RunningServer, notebook: str, live: LiveNotebook, other: YClient
) -> None:
    # JupyterLab's metadata editor (or an older planbook) sets the key as one JSON value
    old = {"schema_version": 1, "plans": {"p-1": _plan(1)}, "log": [{"event": "x"}]}
    other.edit(lambda _ynb: other.meta["metadata"].__setitem__("planbook", old))
    other.flush()
    assert live.wait_for(lambda _: live.get_metadata("planbook") == old, 10)

    live.update_metadata("planbook", {("plans", "p-2"): _plan(2)})
    want = {**old, "plans": {"p-1": _plan(1), "p-2": _plan(2)}}
    assert live.get_metadata("planbook") == want
    assert other.wait_for(lambda o: o.metadata().get("planbook") == want)

    # and a whole-value write over the parts replaces them all
    live.set_metadata("planbook", {"schema_version": 1})
    assert live.get_metadata("planbook") == {"schema_version": 1}
    assert other.wait_for(lambda o: o.metadata().get("planbook") == {"schema_version": 1})
    assert live.make_durable() == ""
    assert on_disk(server, notebook)["metadata"]["planbook"] == {"schema_version": 1}


def test_inside_a_transaction_reads_see_the_parts_and_a_failure_sends_none(
    live: LiveNotebook, other: YClient
) -> None:
    live.set_metadata("planbook", {"plans": {"p-1": {"n": 1}}})
    with pytest.raises(RuntimeError), live.transaction():
        live.update_metadata("planbook", {("plans", "p-1", "n"): 2})
        assert live.get_metadata("planbook") == {"plans": {"p-1": {"n": 2}}}
        raise RuntimeError("the step failed")
    assert live.get_metadata("planbook") == {"plans": {"p-1": {"n": 1}}}
    # a later commit reaches the other client after anything the failed one could have sent
    # (the room relays one client's updates in order; a commit does not wait for its echo)
    live.set_metadata("after", 1)
    assert other.wait_for(lambda o: o.metadata().get("after") == 1)
    assert other.metadata()["planbook"] == {"plans": {"p-1": {"n": 1}}}
    with pytest.raises(ValueError, match="non-empty tuple"):
        live.update_metadata("planbook", {(): 1})
