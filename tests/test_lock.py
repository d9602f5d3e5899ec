"""The notebook lock: reentrant in a thread, exclusive across threads and processes, no litter;
exclusion survives a cleanup that deletes files beside the notebook; a folder it cannot lock is
one line."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from planbook.documents import lock as lock_module
from planbook.documents.file import FileNotebook
from planbook.documents.lock import notebook_lock
from planbook.errors import MetadataError
from planbook.model.events import Event
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace
from tests.conftest import make_notebook


def test_reentrant_and_leaves_no_lock_file_behind(tmp_path: Path) -> None:
    nb = tmp_path / "a.ipynb"
    lock = notebook_lock(nb)
    assert notebook_lock(nb) is lock  # one per notebook in a process
    with lock.hold():
        assert lock.held
        with lock.hold():
            assert lock.held
        assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing written to hold it
    assert not lock.held
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_another_thread_waits_for_the_holder(tmp_path: Path) -> None:
    lock = notebook_lock(tmp_path / "b.ipynb")
    order: list[str] = []

    def other() -> None:
        with lock.hold():
            order.append("other")

    with lock.hold():
        thread = threading.Thread(target=other)
        thread.start()
        time.sleep(0.2)
        order.append("holder")
    thread.join(timeout=10)
    assert order == ["holder", "other"]


def test_another_process_waits_and_then_gives_up_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nb = tmp_path / "c.ipynb"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; "
            "from planbook.documents.lock import notebook_lock\n"
            f"with notebook_lock(Path({str(nb)!r})).hold():\n"
            "    print('held', flush=True); time.sleep(30)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        monkeypatch.setattr(lock_module, "WAIT_SECONDS", 0.3)
        refused = pytest.raises(MetadataError, match=r"another process has held c\.ipynb")
        with refused as info, notebook_lock(nb).hold(wait=0.3):
            pass
        assert "\n" not in str(info.value)
    finally:
        holder.kill()
        holder.wait()
    with notebook_lock(nb).hold(wait=5):  # released with the dead process
        pass


OLD_LOCK = ".{}.planbook-lock"  # where earlier versions kept a lock file


@pytest.mark.parametrize("kind", ["directory", "symlink", "unreadable", "dangling symlink"])
def test_whatever_sits_at_the_old_lock_files_name_is_left_alone(tmp_path: Path, kind: str) -> None:
    nb = tmp_path / "d.ipynb"
    old = tmp_path / OLD_LOCK.format(nb.name)
    elsewhere = tmp_path / "elsewhere"
    if kind == "directory":
        old.mkdir()
    elif kind == "symlink":
        elsewhere.write_text("keep\n")
        old.symlink_to(elsewhere)
    elif kind == "dangling symlink":
        old.symlink_to(elsewhere)
    else:
        old.write_text("")
        old.chmod(0)
    before = sorted(p.name for p in tmp_path.iterdir())
    with notebook_lock(nb).hold(wait=1):
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert kind != "symlink" or elsewhere.read_text() == "keep\n"
    assert kind != "dangling symlink" or not elsewhere.exists()


@pytest.mark.parametrize("kind", ["missing", "a file"])
def test_a_folder_that_cannot_be_locked_is_one_line(tmp_path: Path, kind: str) -> None:
    folder = tmp_path / "folder"
    if kind == "a file":
        folder.write_text("not a folder\n")
    with pytest.raises(MetadataError) as info, notebook_lock(folder / "e.ipynb").hold(wait=1):
        pass
    assert "\n" not in str(info.value) and "cannot lock e.ipynb" in str(info.value)
    assert kind != "a file" or folder.read_text() == "not a folder\n"


def test_notebooks_of_one_folder_take_turns_and_nest_in_one_thread(tmp_path: Path) -> None:
    a, b = notebook_lock(tmp_path / "a.ipynb"), notebook_lock(tmp_path / "b.ipynb")
    with a.hold(), b.hold():  # one transaction reading another notebook of its folder
        assert a.held and b.held
    assert not a.held and not b.held


HOLDER_PROBE = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("free")
except BlockingIOError:
    print("held")
"""


def test_a_save_kept_in_memory_holds_the_notebook_until_it_is_written(tmp_path: Path) -> None:
    """The approval is written with the first step's save (documents/file.py, coalesced):
    between the two the file lags memory, and the notebook stays locked, so no other process
    reads the lagging file or approves the same steps; once the step's save is written both
    are on disk and the lock is free."""
    path = make_notebook(tmp_path / "n.ipynb", ["a = 1", "b = 2"])
    session = Session(
        FileNotebook(path), Workspace(tmp_path, protected=(path,)), notebook_path=path
    )
    session.propose.edit_cell("c1", "a = 10", reason="r")
    seen: list[tuple[str, bool]] = []

    def probe() -> tuple[str, bool]:
        holder = subprocess.run(
            [sys.executable, "-c", HOLDER_PROBE, str(tmp_path)],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout.strip()
        return holder, '"approved"' in path.read_text()

    def on_event(event: Event) -> None:
        if event.kind == "plan_changed" and not seen:  # just approved
            seen.append(probe())

    session.subscribe(on_event)
    assert session.approve().ok
    assert seen == [("held", False)]  # approved in memory, not yet on disk, and held
    assert probe() == ("free", True)
    assert '"a = 10"' in path.read_text()
