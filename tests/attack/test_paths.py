"""Hostile paths against the workspace, through the session's real staging and approval.

Every attack must end in a one-line planbook refusal (or, for a hard link, a write that stays
inside), never hang (pytest-timeout), never raise a raw exception, and never change anything
outside the workspace. Races swap symlinks in a loop while planbook stages and approves.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from planbook.errors import PlanbookError
from planbook.sessions.session import Session
from tests.attack.mp_workers import open_session
from tests.conftest import make_notebook

pytestmark = pytest.mark.timeout(60)


def _fingerprint(folder: Path) -> dict[str, str]:
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_symlink() or not p.is_file():
            out[str(p)] = "node"
        else:
            out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[Session, Path, Path]]:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    (outside / "sub").mkdir()
    nb = make_notebook(root / "nb.ipynb", ["a = 1"])
    (root / "a.txt").write_text("a\n")
    (root / "dir").mkdir()
    os.mkfifo(root / "pipe")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(root / "sock"))
    (root / "loop").symlink_to("loop")
    (root / "ping").symlink_to("pong")
    (root / "pong").symlink_to("ping")
    (root / "out-link.txt").symlink_to(outside / "secret.txt")
    (root / "out-dir").symlink_to(outside)
    (root / "zero").symlink_to("/dev/zero")
    os.link(outside / "secret.txt", root / "hard.txt")
    try:
        os.mknod(root / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except OSError:
        (root / "null").symlink_to("/dev/null")  # no mknod here: the outside device instead
    before = _fingerprint(outside)
    session = open_session(nb)
    yield session, root, outside
    session.close()
    server.close()
    assert _fingerprint(outside) == before, "something outside the workspace changed"


LONG = "x" * 300
HOSTILE = [
    "pipe",
    "sock",
    "null",
    "loop",
    "loop/child.txt",
    "ping",
    "pong/child.txt",
    "out-link.txt",
    "out-dir/secret.txt",
    "out-dir/new.txt",
    "out-dir/sub/new.txt",
    "zero",
    "a.txt/child.txt",
    "a.txt/deeper/child.txt",
    f"{LONG}.txt",
    f"dir/{LONG}",
    "/".join(["d"] * 2100),
    "../outside/secret.txt",
    "dir/../../outside/new.txt",
    "/etc/passwd",
    str(Path("/proc/self/mem")),
    "nb.ipynb",
    "dir",
    ".",
    "bad\x00name",
]
OPS: dict[str, Callable[[Session, str], object]] = {
    "write": lambda s, p: s.propose.write_file(p, "pwned\n", reason="attack"),
    "edit": lambda s, p: s.propose.edit_file(p, [{"search": "a", "replace": "b"}], reason="x"),
    "delete": lambda s, p: s.propose.delete_file(p, reason="attack"),
    "read": lambda s, p: s.workspace.read_text(p),
}


@pytest.mark.parametrize("path", HOSTILE, ids=[p[:30] for p in HOSTILE])
@pytest.mark.parametrize("op", sorted(OPS))
def test_a_hostile_path_is_refused_in_one_line(
    world: tuple[Session, Path, Path], op: str, path: str
) -> None:
    session, _root, _ = world
    if op == "read" and path == "nb.ipynb":
        assert session.workspace.read_text(path)  # reading the notebook is fine
        return
    with pytest.raises(PlanbookError) as info:
        OPS[op](session, path)
    assert "\n" not in str(info.value) and len(str(info.value)) < 500
    assert session.current_plan() is None or session.current_plan().steps == []


def test_a_hard_link_to_an_outside_file_is_replaced_not_written_through(
    world: tuple[Session, Path, Path],
) -> None:
    session, root, outside = world
    session.propose.write_file("hard.txt", "mine\n", reason="replace")
    assert session.approve().ok
    assert (root / "hard.txt").read_text() == "mine\n"
    assert (outside / "secret.txt").read_text() == "secret\n"


SWAPS: dict[str, Callable[[Path, Path], None]] = {
    "fifo": lambda root, out: (os.unlink(root / "t.txt"), os.mkfifo(root / "t.txt")),  # type: ignore[func-returns-value]
    "symlink out": lambda root, out: (
        os.unlink(root / "t.txt"),
        (root / "t.txt").symlink_to(out / "secret.txt"),
    ),
    "symlink loop": lambda root, out: (
        os.unlink(root / "t.txt"),
        (root / "t.txt").symlink_to("t.txt"),
    ),
    "folder": lambda root, out: (os.unlink(root / "t.txt"), (root / "t.txt").mkdir()),
    "parent to symlink": lambda root, out: (
        os.rename(root / "sub", root / "sub-old"),
        (root / "sub").symlink_to(out / "sub"),
    ),
    "parent to file": lambda root, out: (
        os.rename(root / "sub", root / "sub-old"),
        (root / "sub").write_text("now a file"),
    ),
}


@pytest.mark.parametrize("swap", sorted(SWAPS))
@pytest.mark.parametrize("op", ["write", "edit", "delete"])
def test_a_target_swapped_after_staging_is_refused_at_approval(
    world: tuple[Session, Path, Path], swap: str, op: str
) -> None:
    session, root, outside = world
    (root / "sub").mkdir()
    (root / "sub" / "t.txt").write_text("a\n")
    (root / "t.txt").write_text("a\n")
    target = "sub/t.txt" if swap.startswith("parent") else "t.txt"
    OPS[op](session, target)
    SWAPS[swap](root, outside)
    report = session.approve()
    outcome = report.outcomes[0]
    assert outcome.status in ("failed", "conflict"), outcome
    assert "\n" not in outcome.message
    plan = session.current_plan()
    assert plan.state != "executing"
    assert not (outside / "sub" / "t.txt").exists()
    # The plan still takes new steps and approvals at once.
    session.propose.write_file("after.txt", "ok\n", reason="after")
    assert session.approve().ok


def _swapper(stop: threading.Event, flip: Callable[[bool], None]) -> threading.Thread:
    def loop() -> None:
        state = False
        while not stop.is_set():
            state = not state
            with contextlib.suppress(OSError):
                flip(state)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread


RACE_ROUNDS = 40


def test_a_folder_swapped_for_a_symlink_in_a_loop_never_leads_outside(
    world: tuple[Session, Path, Path],
) -> None:
    session, root, outside = world
    (root / "real").mkdir()

    def flip(to_link: bool) -> None:
        tmp = root / "sub.new"
        if to_link:
            tmp.symlink_to(outside / "sub")
        else:
            tmp.symlink_to(root / "real")
        os.replace(tmp, root / "sub")

    flip(False)
    stop = threading.Event()
    thread = _swapper(stop, flip)
    raw, refusals, applied = 0, 0, 0
    raw_seen: list[str] = []
    try:
        for n in range(RACE_ROUNDS):
            try:
                session.propose.write_file(f"sub/f{n}.txt", "x\n", reason="race")
                report = session.approve()
                applied += report.ok
                refusals += not report.ok
                assert all("\n" not in o.message for o in report.outcomes)
            except PlanbookError as exc:
                assert "\n" not in str(exc)
                refusals += 1
            except Exception as exc:
                raw += 1
                raw_seen.append(f"{type(exc).__name__}: {exc}")
            plan = session.current_plan()  # None while every staging so far was refused
            assert plan is None or plan.state != "executing"
    finally:
        stop.set()
        thread.join()
    assert raw == 0, raw_seen
    assert applied + refusals == RACE_ROUNDS
    assert list((outside / "sub").iterdir()) == []


def test_a_file_swapped_for_a_symlink_in_a_loop_is_never_written_through(
    world: tuple[Session, Path, Path],
) -> None:
    session, root, outside = world
    (root / "plain.txt").write_text("a\n")

    def flip(to_link: bool) -> None:
        tmp = root / "t.new"
        if to_link:
            tmp.symlink_to(outside / "secret.txt")
        else:
            tmp.hardlink_to(root / "plain.txt")
        os.replace(tmp, root / "t.txt")

    flip(False)
    stop = threading.Event()
    thread = _swapper(stop, flip)
    raw = 0
    raw_seen: list[str] = []
    try:
        for _ in range(RACE_ROUNDS):
            try:
                session.propose.edit_file("t.txt", [{"search": "a", "replace": "b"}], reason="r")
                report = session.approve()
                assert all("\n" not in o.message for o in report.outcomes)
            except PlanbookError as exc:
                assert "\n" not in str(exc)
            except Exception as exc:
                raw += 1
                raw_seen.append(f"{type(exc).__name__}: {exc}")
            plan = session.current_plan()  # None while every staging so far was refused
            assert plan is None or plan.state != "executing"
    finally:
        stop.set()
        thread.join()
    assert raw == 0, raw_seen
    assert (outside / "secret.txt").read_text() == "secret\n"


def test_new_files_get_the_umask_and_existing_files_keep_their_mode(
    world: tuple[Session, Path, Path],
) -> None:
    session, root, _ = world
    (root / "tool.sh").write_text("echo hi\n")
    (root / "tool.sh").chmod(0o755)
    session.propose.write_file("new.txt", "new\n", reason="new")
    session.propose.edit_file("tool.sh", [{"search": "hi", "replace": "ho"}], reason="edit")
    assert session.approve().ok
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((root / "new.txt").stat().st_mode) == 0o666 & ~umask
    assert stat.S_IMODE((root / "tool.sh").stat().st_mode) == 0o755


def test_the_agents_grep_skips_special_files_instead_of_blocking(
    world: tuple[Session, Path, Path],
) -> None:
    import asyncio
    from types import SimpleNamespace

    from planbook.agent.tools_read import grep_files

    session, root, _ = world
    (root / "dir" / "hit.txt").write_text("needle\n")
    ctx = SimpleNamespace(deps=SimpleNamespace(session=session))
    found = asyncio.run(grep_files(ctx, "needle"))  # type: ignore[arg-type]
    assert found == "dir/hit.txt:1: needle"
