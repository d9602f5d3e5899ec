"""Content that exhausts memory or time (issue 23, section 6), attacked the way a received
notebook would: notebooks made with planbook itself, then edited as plain JSON.

- A checkpoint blob that is a compression bomb (zlib or brotli, a few hundred KB that inflate
  to hundreds of MB, under the right hash): every path that inflates answers one line, writes
  nothing, and never holds more than the recorded size (measured with tracemalloc).
- Duplicate step ids (in a plan, or shared with another record): the plan refuses to load as
  corrupted metadata, in one line that names the id, and the notebook is left as it was.
- A plan of 10,000 steps: checking it before approval grows linearly (a ratio, not a time).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import brotli
import pytest

from planbook.documents.file import FileNotebook
from planbook.engine.approval import approval_hash, select
from planbook.engine.approval_checks import check_selection, dry_run
from planbook.engine.hashing import ABSENT, cell_hash
from planbook.errors import MetadataError, PlanbookError
from planbook.model.operations import EditCell, InsertCell
from planbook.model.plan import Plan, Step
from planbook.sessions.session import Session
from planbook.surfaces.widget.panel import ReviewPanel
from planbook.workspace.files import Workspace
from tests.conftest import make_notebook

#: What the bomb inflates to: far beyond any size a test notebook records.
BOMB_BYTES = 192 * 1024 * 1024
#: The most memory any refusal may take (tracemalloc's peak): a few inflation pieces.
PEAK_LIMIT = 16 * 1024 * 1024
LONG_SOURCE = "\n".join(f"value_{i} = {i} * {i}" for i in range(40))  # over the inline limit


def open_session(path: Path) -> Session:
    return Session(
        FileNotebook(path), Workspace(path.parent, protected=(path,)), notebook_path=path
    )


def _zeros_hash(size: int) -> str:
    digest = hashlib.sha256()
    piece = bytes(1 << 20)
    for _ in range(size >> 20):
        digest.update(piece)
    return digest.hexdigest()


def _bomb(method: str, size: int) -> bytes:
    piece = bytes(1 << 20)
    if method == "zlib":
        deflate = zlib.compressobj(1)
        parts = [deflate.compress(piece) for _ in range(size >> 20)]
        return b"".join([*parts, deflate.flush()])
    packer = brotli.Compressor(quality=5)
    parts = [packer.process(piece) for _ in range(size >> 20)]
    return b"".join([*parts, packer.finish()])


@pytest.fixture(scope="module")
def bombs() -> dict[str, tuple[str, bytes]]:
    """method -> (sha256 of the inflated content, the compressed bomb)."""
    digest = _zeros_hash(BOMB_BYTES)
    return {m: (digest, _bomb(m, BOMB_BYTES)) for m in ("zlib", "brotli")}


def done_notebook(tmp_path: Path) -> Path:
    """A notebook where planbook ran two steps: a file rewrite (its old bytes are a blob) and
    an edit of a long cell (its old source is compressed inside the checkpoint)."""
    path = make_notebook(tmp_path / "received.ipynb", ["import math", LONG_SOURCE, "print(1)"])
    (tmp_path / "data.txt").write_text("old data\n")
    session = open_session(path)
    session.propose.write_file("data.txt", "new data\n", reason="refresh the data")
    session.propose.edit_cell("c2", "value = 1", reason="shorter")
    assert session.approve().ok
    return path


def _encoded(method: str, payload: bytes, recorded: int | None) -> str:
    prefix = {"zlib": "b85:", "brotli": "brotli:"}[method]
    size = "" if recorded is None else f"{recorded}:"
    return prefix + size + base64.b85encode(payload).decode("ascii")


def plant_bomb(path: Path, where: str, method: str, bomb: tuple[str, bytes], sized: bool) -> None:
    """Edit the notebook as plain JSON: the file's blob, or the cell's old source, becomes
    the bomb (recording the size the true content had, or no size as older blobs)."""
    nb = json.loads(path.read_text())
    record = nb["metadata"]["planbook"]
    checkpoints = [cp for bucket in record["checkpoints"].values() for cp in bucket.values()]
    digest, payload = bomb
    if where == "file blob":
        snap = next(f for cp in checkpoints for f in cp.get("files", []))
        recorded = len("old data\n") if sized else None
        record["blobs"][digest] = _encoded(method, payload, recorded)
        snap["blob"] = digest
    else:
        snap = next(c for cp in checkpoints for c in cp.get("cells", []) if c["cell_id"] == "c2")
        recorded = len(json.dumps(LONG_SOURCE)) if sized else None
        snap["parts"]["source"] = {"z": _encoded(method, payload, recorded)}
    path.write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


def peak_of(action: Callable[[], Any]) -> tuple[Any, int]:
    """What ``action`` returned or raised, and tracemalloc's peak while it ran."""
    tracemalloc.start()
    try:
        try:
            result: Any = action()
        except PlanbookError as exc:
            result = exc
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def one_line_refusal(text: str) -> None:
    assert "\n" not in text.strip() and "inflates to more than" in text, text
    assert "Traceback" not in text and "MemoryError" not in text


CASES = [
    pytest.param(where, method, sized, id=f"{where}-{method}-{'sized' if sized else 'unsized'}")
    for where in ("file blob", "old source")
    for method in ("zlib", "brotli")
    for sized in (True, False)
]


@pytest.mark.parametrize(("where", "method", "sized"), CASES)
def test_a_compression_bomb_is_refused_in_one_line_everywhere(
    where: str, method: str, sized: bool, bombs: dict[str, tuple[str, bytes]], tmp_path: Path
) -> None:
    path = done_notebook(tmp_path)
    plant_bomb(path, where, method, bombs[method], sized)
    before = path.read_bytes()
    data_before = (tmp_path / "data.txt").read_bytes()
    session = open_session(path)
    edited = 1 if where == "file blob" else 2

    views, peak = peak_of(session.step_views)
    assert peak < PEAK_LIMIT
    one_line_refusal(views[edited - 1].error)
    assert views[edited - 1].before == ""

    text, peak = peak_of(session.render_text)
    assert peak < PEAK_LIMIT
    one_line_refusal(next(line for line in text.splitlines() if line.startswith("   ! ")))

    refused, peak = peak_of(lambda: session.rollback("1", confirm=True))
    assert peak < PEAK_LIMIT
    assert isinstance(refused, MetadataError)
    one_line_refusal(str(refused))
    assert path.read_bytes() == before and (tmp_path / "data.txt").read_bytes() == data_before

    panel, peak = peak_of(lambda: ReviewPanel(session))
    assert peak < PEAK_LIMIT
    one_line_refusal(panel.state["steps"][edited - 1]["error"])

    report = session.gc()  # gc names blobs, it never inflates them: it still works
    assert "dropped 0 checkpoints" in str(report)
    after = json.loads(path.read_text())
    assert after["cells"] == json.loads(before)["cells"]
    assert bombs[method][0] in after["metadata"]["planbook"]["blobs"] or where == "old source"


@pytest.mark.parametrize("method", ["zlib", "brotli"])
def test_planbook_show_on_a_bomb_answers_one_line_in_bounded_memory(
    method: str, bombs: dict[str, tuple[str, bytes]], tmp_path: Path
) -> None:
    path = done_notebook(tmp_path)
    plant_bomb(path, "old source", method, bombs[method], sized=True)
    before = path.read_bytes()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    child = subprocess.Popen(
        [sys.executable, "-m", "planbook", "show", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    refusals = [line for line in out.splitlines() if "inflates to more than" in line]
    assert len(refusals) == 1 and "Traceback" not in err + out
    one_line_refusal(refusals[0].removeprefix("   ! "))
    assert path.read_bytes() == before


# --- duplicate ids ---------------------------------------------------------------------------
def two_plans(tmp_path: Path) -> Path:
    """A notebook with a done plan (its steps have checkpoints) and a pending one."""
    path = make_notebook(tmp_path / "received.ipynb", ["import math", "x = 1", "print(x)"])
    session = open_session(path)
    session.propose.edit_cell("c1", "import os", reason="first plan")
    assert session.approve().ok
    session.new_plan("second")
    session.propose.edit_cell("c2", "x = 2", reason="a")
    session.propose.edit_cell("c3", "print(x * 2)", reason="b")
    return path


def _retarget(path: Path, pick: Callable[[dict[str, Any]], str]) -> str:
    """Give the second plan's last step the id ``pick`` chooses from the record (as plain JSON)."""
    nb = json.loads(path.read_text())
    record = nb["metadata"]["planbook"]
    second = record["plans"][record["plan_order"][-1]]
    steps = second["revisions"][-1]["steps"]
    new_id = pick(record)
    steps[-1]["id"] = new_id
    path.write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    return new_id


def _first_plan_step(record: dict[str, Any]) -> str:
    return str(record["plans"][record["plan_order"][0]]["revisions"][-1]["steps"][0]["id"])


def _its_own_neighbour(record: dict[str, Any]) -> str:
    return str(record["plans"][record["plan_order"][-1]]["revisions"][-1]["steps"][0]["id"])


def _a_checkpoint(record: dict[str, Any]) -> str:
    return next(iter(next(iter(record["checkpoints"].values()))))


def _a_plan(record: dict[str, Any]) -> str:
    return str(record["plan_order"][0])


@pytest.mark.parametrize(
    "pick",
    [_its_own_neighbour, _first_plan_step, _a_checkpoint, _a_plan],
    ids=["two steps of a plan", "another plan's step", "a checkpoint", "a plan"],
)
def test_a_duplicated_step_id_refuses_the_plan_as_corrupted(
    pick: Callable[[dict[str, Any]], str], tmp_path: Path
) -> None:
    path = two_plans(tmp_path)
    duplicated = _retarget(path, pick)
    before = path.read_bytes()
    with pytest.raises(MetadataError) as refused:
        open_session(path).approve()
    message = str(refused.value)
    assert "\n" not in message and "corrupted" in message and repr(duplicated) in message
    assert path.read_bytes() == before  # nothing approved, nothing run, nothing rewritten

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    for verb in ("show", "approve"):
        shown = subprocess.run(
            [sys.executable, "-m", "planbook", verb, str(path)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert shown.returncode != 0 and repr(duplicated) in shown.stderr
        assert "Traceback" not in shown.stderr and len(shown.stderr.strip().splitlines()) == 1
    assert path.read_bytes() == before


# --- a plan of 10,000 steps --------------------------------------------------------------------
def big_plan(tmp_path: Path, steps: int) -> tuple[Session, Plan]:
    """A plan of ``steps`` steps on a small notebook: cells inserted one after another, each
    edited by the next step (which builds on it), as an agent writing a long notebook would.
    Built directly (staging re-projects the plan at every step, which is not under test)."""
    path = make_notebook(tmp_path / f"big{steps}.ipynb", ["x = 1", "y = 2"])
    session = open_session(path)
    plan = session.new_plan("a long plan")
    made: list[Step] = []
    anchor = "c1"
    for i in range(steps):
        if i % 2 == 0:
            op: InsertCell | EditCell = InsertCell(
                cell_id=f"n{i}", source=f"v{i} = {i}", after=anchor
            )
            base, anchor = ABSENT, f"n{i}"
        else:
            op, base = (
                EditCell(cell_id=anchor, source=f"v = {i}"),
                cell_hash("code", f"v{i - 1} = {i - 1}"),
            )
        made.append(Step(operation=op, base=base, depends_on=(made[-1].id,) if made else ()))
    plan.current.steps = made
    plan.fire("stage")
    return session, plan


def check_before_approving(session: Session, plan: Plan) -> None:
    """Everything checked before a plan is approved: the selection, its dependencies, the dry
    run, the approval hash, and the views the person approves from."""
    chosen = select(plan, None)
    check_selection(plan, chosen)
    report = dry_run(plan, chosen, session.document, session.workspace)
    assert [o.status for o in report.outcomes[:2]] == ["would run", "would run"]
    approval_hash(chosen)
    views = session.step_views(plan)
    assert views[-1].before == f"v{len(chosen) - 2} = {len(chosen) - 2}"


def operations(action: Callable[[], Any]) -> int:
    """How many Python lines and calls (to Python and to C functions) ``action`` takes: the
    same on every run, whatever else the machine is doing, unlike a time (a quadratic scan
    is a loop of lines or a call per item, so it shows here)."""
    count = 0

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        count += 1
        return tracer

    def profiler(frame: Any, event: str, arg: Any) -> None:
        nonlocal count
        if event == "c_call":
            count += 1

    sys.settrace(tracer)
    sys.setprofile(profiler)
    try:
        action()
    finally:
        sys.settrace(None)
        sys.setprofile(None)
    return count


def test_checking_a_plan_grows_linearly_with_its_steps(tmp_path: Path) -> None:
    small, large = big_plan(tmp_path, 1_000), big_plan(tmp_path, 10_000)
    check_before_approving(*small)  # warm: pydantic builds its serializers on first use
    check_before_approving(*large)  # and the approval texts are remembered, as at approval
    ratio = operations(lambda: check_before_approving(*large)) / operations(
        lambda: check_before_approving(*small)
    )
    assert ratio < 15, f"10,000 steps cost {ratio:.1f} times 1,000 steps: not linear"
