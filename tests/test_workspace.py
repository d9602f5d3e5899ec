from __future__ import annotations

import os
from pathlib import Path

import pytest

from planbook.errors import OutsideWorkspace, UnreadableFile
from planbook.workspace.files import Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    (tmp_path / "root").mkdir()
    return Workspace(tmp_path / "root", max_bytes=1000)


@pytest.mark.parametrize("path", ["../secret.txt", "a/../../secret.txt", "/etc/passwd", ""])
def test_paths_that_leave_the_root_are_refused(ws: Workspace, path: str) -> None:
    with pytest.raises(OutsideWorkspace, match=r"outside the workspace|refused"):
        ws.resolve(path)


def test_a_symlink_that_escapes_is_refused_for_reading_and_writing(
    ws: Workspace, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    (ws.root / "link.txt").symlink_to(outside)
    (ws.root / "linkdir").symlink_to(tmp_path)
    with pytest.raises(OutsideWorkspace):
        ws.read_text("link.txt")
    with pytest.raises(OutsideWorkspace):
        ws.write_bytes("linkdir/new.txt", b"x")
    assert outside.read_text() == "keep me"
    assert not (tmp_path / "new.txt").exists()


def test_paths_inside_are_named_relative_to_the_root(ws: Workspace) -> None:
    assert ws.relative("sub/../a.txt") == "a.txt"
    assert ws.relative(str(ws.root / "b" / "c.py")) == "b/c.py"


def test_binary_and_oversized_files_get_a_clear_refusal(ws: Workspace) -> None:
    (ws.root / "img.png").write_bytes(b"\x89PNG\x00\x00binary")
    (ws.root / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    (ws.root / "big.txt").write_text("x" * 1001)
    with pytest.raises(UnreadableFile, match="binary"):
        ws.read_text("img.png")
    with pytest.raises(UnreadableFile, match="not UTF-8"):
        ws.read_text("latin.txt")
    with pytest.raises(UnreadableFile, match="over the 1,000-byte limit"):
        ws.read_text("big.txt")
    with pytest.raises(UnreadableFile, match="over the"):
        ws.write_bytes("new.txt", b"y" * 1001)
    assert not (ws.root / "new.txt").exists()


def test_writes_are_atomic_and_keep_the_file_mode(ws: Workspace) -> None:
    target = ws.root / "run.sh"
    target.write_text("old")
    os.chmod(target, 0o755)
    ws.write_bytes("run.sh", b"new")
    assert target.read_bytes() == b"new"
    assert target.stat().st_mode & 0o777 == 0o755
    assert [p.name for p in ws.root.iterdir()] == ["run.sh"]  # no temp file left behind


def test_the_notebook_itself_is_protected(tmp_path: Path) -> None:
    nb = tmp_path / "n.ipynb"
    nb.write_text("{}")
    ws = Workspace(tmp_path, protected=(nb,))
    with pytest.raises(UnreadableFile, match="the notebook itself"):
        ws.write_bytes("n.ipynb", b"{}")


def test_shell_runs_in_the_root_and_a_timeout_kills_the_command(ws: Workspace) -> None:
    result = ws.run_shell("pwd && echo err >&2", timeout=10)
    assert result.ok and result.stdout.strip() == str(ws.root) and result.stderr.strip() == "err"
    slow = ws.run_shell("sleep 5 & sleep 5; echo never", timeout=0.3)
    assert slow.timed_out and not slow.ok and "never" not in slow.stdout
