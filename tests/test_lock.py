"""The notebook lock: reentrant in a thread, exclusive across threads and processes, no litter."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from planbook.documents import lock as lock_module
from planbook.documents.lock import lock_path, notebook_lock
from planbook.errors import MetadataError


def test_reentrant_and_leaves_no_lock_file_behind(tmp_path: Path) -> None:
    nb = tmp_path / "a.ipynb"
    lock = notebook_lock(nb)
    assert notebook_lock(nb) is lock  # one per notebook in a process
    with lock.hold():
        assert lock_path(nb).exists() and lock.held
        with lock.hold():
            assert lock.held
        assert lock.held
    assert not lock.held
    assert not lock_path(nb).exists()
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


def test_a_symlink_in_place_of_the_lock_file_is_not_followed(tmp_path: Path) -> None:
    nb = tmp_path / "d.ipynb"
    target = tmp_path / "elsewhere"
    lock_path(nb).symlink_to(target)
    with pytest.raises(MetadataError, match="is a symlink"), notebook_lock(nb).hold():
        pass
    assert not target.exists()
