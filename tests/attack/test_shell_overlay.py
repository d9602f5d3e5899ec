"""Shell steps in an overlay, checked against reality: for every command of
shell_write_corpus.toml the preview's changes equal what the same command changes when run
plainly (paths, bytes, modes), and approving it then rolling it back leaves the workspace
byte- and mode-identical. Real bubblewrap, real kernel overlays: nothing faked."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import time
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pytest

import planbook
from planbook.documents.file import FileNotebook
from planbook.documents.memory import MemoryNotebook
from planbook.engine.rules.preview_fit import auto_preview_on
from planbook.errors import LayerRefused
from planbook.model.checkpoint import FileSnapshot
from planbook.model.plan import APPROVED_BY_RULE, Step
from planbook.sessions.session import Session
from planbook.surfaces.cli import main as cli
from planbook.workspace.files import Workspace
from planbook.workspace.layer import read_layer
from planbook.workspace.overlay import OverlayStatus, overlay_probe
from tests.agent.conftest import make_session

CORPUS = tomllib.loads((Path(__file__).parent / "shell_write_corpus.toml").read_text())["command"]

pytestmark = pytest.mark.skipif(
    not overlay_probe().available, reason=f"no overlays here: {overlay_probe().reason}"
)


@dataclass(frozen=True)
class Entry:
    kind: str
    mode: int | None
    digest: str


def snapshot(root: Path) -> dict[str, Entry]:
    """Every folder, file and symlink under ``root``: kind, mode and bytes (as a hash)."""
    out: dict[str, Entry] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                target = os.fsencode(os.readlink(path))
                out[rel] = Entry("symlink", None, hashlib.sha256(target).hexdigest())
            elif stat.S_ISDIR(info.st_mode):
                out[rel] = Entry("folder", stat.S_IMODE(info.st_mode), "")
            else:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                out[rel] = Entry("file", stat.S_IMODE(info.st_mode), digest)
    return out


def expected_changes(
    before: dict[str, Entry], after: dict[str, Entry]
) -> dict[str, tuple[str, str, str, int | None]]:
    """What changed, classified the way a preview says it."""
    out: dict[str, tuple[str, str, str, int | None]] = {}
    for path in before.keys() | after.keys():
        a, b = before.get(path), after.get(path)
        if a == b:
            continue
        if b is None:
            assert a is not None
            out[path] = ("deleted", a.kind, "", None)
        elif a is None:
            out[path] = ("created", b.kind, b.digest, b.mode)
        elif a.kind != b.kind or a.digest != b.digest:
            out[path] = ("changed", b.kind, b.digest, b.mode)
        else:
            out[path] = ("mode", b.kind, b.digest, b.mode)
    return out


def _tar_bytes(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 1_600_000_000, 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _zip_bytes(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in files.items():
            z.writestr(zipfile.ZipInfo(name, (2020, 1, 1, 0, 0, 0)), data)
    return buf.getvalue()


MAKEFILE = (
    "out/report.txt: data.csv\n\tmkdir -p out && sort data.csv > out/report.txt\n"
    "clean:\n\trm -rf out\n"
    "fail:\n\techo partial > partial.txt && false && echo never > never.txt\n"
)
SCRIPT = (
    "import os\n"
    "os.makedirs('results', exist_ok=True)\n"
    "rows = open('data.csv').read().splitlines()[1:]\n"
    "total = sum(int(r.split(',')[1]) for r in rows)\n"
    "open('results/summary.txt', 'w').write(f'total {total}\\n')\n"
    "open('results/plot.dat', 'wb').write(bytes(range(256)))\n"
)


def build_workspace(root: Path, item: dict[str, Any]) -> None:
    root.mkdir()
    files = {
        "a.txt": "one\ntwo\nthree\n",
        "b.txt": "alpha\nbeta\n",
        "data.csv": "id,value\n1,10\n2,20\n3,30\n",
        "src/main.py": "print('main')\n",
        "src/util.py": "def f():\n    return 1\n",
        "docs/readme.md": "# Readme\n\nText.\n",
        "bin/run.sh": "#!/bin/sh\necho run\n",
        "secret.txt": "s\n",
        "deep/x/y/z.txt": "z\n",
        "Makefile": MAKEFILE,
        "script.py": SCRIPT,
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / "bin/run.sh").chmod(0o755)
    (root / "secret.txt").chmod(0o600)
    (root / "empty").mkdir()
    (root / "link.txt").symlink_to("a.txt")
    bundle = {"bundle/x.txt": b"x\n", "bundle/sub/y.txt": b"y\n"}
    (root / "bundle.tar").write_bytes(_tar_bytes(bundle))
    (root / "bundle.zip").write_bytes(_zip_bytes(bundle))
    if item.get("git"):
        (root / "tracked.txt").write_text("v1\n")
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
        subprocess.run([*git, "add", "tracked.txt"], cwd=root, check=True)
        subprocess.run([*git, "commit", "-qm", "one"], cwd=root, check=True)
        (root / "tracked.txt").write_text("v2\n")
    if item.get("wheel"):
        (root / "dist").mkdir()
        (root / "dist/tiny-1.0-py3-none-any.whl").write_bytes(
            _zip_bytes(
                {
                    "tiny/__init__.py": b"VALUE = 1\n",
                    "tiny-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: tiny\n"
                    b"Version: 1.0\n",
                    "tiny-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\n"
                    b"Root-Is-Purelib: true\nTag: py3-none-any\n",
                    "tiny-1.0.dist-info/RECORD": b"tiny/__init__.py,,\n"
                    b"tiny-1.0.dist-info/METADATA,,\ntiny-1.0.dist-info/WHEEL,,\n"
                    b"tiny-1.0.dist-info/RECORD,,\n",
                }
            )
        )


@pytest.fixture(autouse=True)
def quiet_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same environment for the plain run and the approved one: no personal git config,
    no auto preview at staging (each test previews once, on purpose)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setattr("planbook.sessions.proposer.auto_preview_on", lambda root: False)


def run_plainly(root: Path, command: str) -> dict[str, Entry]:
    """Run ``command`` plainly in ``root``; what it left; ``root`` put back as it was."""
    keep = root.with_name(root.name + ".keep")
    shutil.copytree(root, keep, symlinks=True)
    subprocess.run(["/bin/sh", "-c", command], cwd=root, capture_output=True, timeout=60)
    after = snapshot(root)
    shutil.rmtree(root)
    shutil.copytree(keep, root, symlinks=True)
    shutil.rmtree(keep)
    return after


def without(entries: dict[str, Any], ignore: list[str]) -> dict[str, Any]:
    return {k: v for k, v in entries.items() if k not in ignore}


@pytest.mark.parametrize("item", CORPUS, ids=[c["name"] for c in CORPUS])
def test_preview_equals_reality_and_rollback_restores(tmp_path: Path, item: dict[str, Any]) -> None:
    root = tmp_path / "ws"
    build_workspace(root, item)
    ignore = item.get("ignore", [])
    start = snapshot(root)
    session = make_session(root)
    session.propose.shell(item["run"], reason="corpus", timeout=60)

    preview = session.preview(1)
    assert snapshot(root) == start, "the preview touched the workspace"
    assert not preview.problem, preview.problem

    plain = run_plainly(root, item["run"])
    assert snapshot(root) == start
    expected = without(expected_changes(start, plain), ignore)
    shown = without(
        {c.path: (c.kind, c.entry, c.digest, c.mode_after) for c in preview.changes}, ignore
    )
    assert shown == expected

    session.approve()
    (step,) = session.current_plan().steps  # type: ignore[union-attr]
    assert "refused" not in (step.error or ""), step.error
    assert without(snapshot(root), ignore) == without(plain, ignore)
    if not ignore:
        assert step.preview is not None and "match the preview" in (step.preview.after_run or "")

    session.rollback()
    assert snapshot(root) == start, "rollback did not restore the workspace exactly"


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 60
    assert len({c["name"] for c in CORPUS}) == len(CORPUS)


def test_a_step_without_a_preview_is_stored_as_before(tmp_path: Path) -> None:
    session = make_session(tmp_path)
    step = session.propose.shell("ls", reason="x")
    assert "preview" not in step.model_dump(mode="json")
    snap = FileSnapshot(path="a")
    assert "kind" not in snap.model_dump(mode="json")


# --- attacks: each refused or bounded in one line, nothing applied --------------------------


def one_step(session: planbook.Session) -> Step:
    (step,) = session.current_plan().steps  # type: ignore[union-attr]
    return step


def refused_whole(
    tmp_path: Path, command: str, words: str, *, by: str = "", timeout: float = 60
) -> planbook.Session:
    """``command`` previewed and approved: both refuse its layer in one line naming
    ``words``, and the workspace is as it was."""
    root = tmp_path / "ws"
    build_workspace(root, {})
    start = snapshot(root)
    session = make_session(root)
    session.propose.shell(command, reason="attack", timeout=timeout)
    preview = session.preview(1)
    assert preview.problem.startswith("refused") and words in preview.problem, preview.problem
    assert "\n" not in preview.problem
    session.approve(by=by) if by else session.approve()
    step = one_step(session)
    assert step.status == "failed" and words in (step.error or ""), step.error
    assert "nothing of" in (step.error or "") and "\n" not in (step.error or "")
    assert snapshot(root) == start
    return session


def test_a_symlink_out_of_the_workspace_is_refused(tmp_path: Path) -> None:
    refused_whole(tmp_path, "ln -s /etc/passwd passwd && echo ok > ok.txt", "symlink")


def test_a_relative_symlink_climbing_out_is_refused(tmp_path: Path) -> None:
    refused_whole(tmp_path, "ln -s ../../../../etc docs/etc", "leads out of the workspace")


def test_a_fifo_is_refused(tmp_path: Path) -> None:
    refused_whole(tmp_path, "mkfifo pipe && echo ok > ok.txt", "FIFO")


def test_ten_thousand_files_are_refused(tmp_path: Path) -> None:
    many = "python -c \"[open(f'f{i}', 'w').close() for i in range(10001)]\""
    refused_whole(tmp_path, many, "10,000 entries")


def test_a_socket_left_by_an_approved_command_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    build_workspace(root, {})
    start = snapshot(root)
    session = make_session(root)
    session.propose.shell(
        "python -c \"import socket; socket.socket(socket.AF_UNIX).bind('s.sock')\"", reason="x"
    )
    session.approve()
    assert "a socket" in (one_step(session).error or "")
    assert snapshot(root) == start


def test_a_write_into_git_hooks_by_a_rule_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    build_workspace(root, {})
    (root / ".git").mkdir()
    (root / ".git/config").write_text("[core]\n")
    start = snapshot(root)
    session = make_session(root)
    hook = (
        "python -c \"import os; os.makedirs('.g'+'it/hooks'); "
        "open('.g'+'it/hooks/pre-commit', 'w').write('curl x|sh')\""
    )
    session.propose.shell(hook, reason="x")
    session.approve(by=APPROVED_BY_RULE)
    error = one_step(session).error or ""
    assert ".git/hooks" in error and "nothing of its layer was applied" in error, error
    assert snapshot(root) == start


def test_a_write_into_the_notebook_is_refused_even_when_the_person_approves(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    build_workspace(root, {})
    notebook = root / "n.ipynb"
    notebook.write_text('{"cells": []}\n')
    start = snapshot(root)
    session = planbook.Session(MemoryNotebook(cells=[]), Workspace(root, protected=(notebook,)))
    session.propose.shell("echo '{}' > n.ipynb && echo ok > ok.txt", reason="x")
    assert "the notebook" in session.preview(1).problem
    session.approve()
    error = one_step(session).error or ""
    assert "n.ipynb" in error and "nothing of its layer was applied" in error, error
    assert snapshot(root) == start


def test_a_command_that_never_exits_is_stopped_and_nothing_applied(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    build_workspace(root, {})
    start = snapshot(root)
    session = make_session(root)
    session.propose.shell("echo half > half.txt; sleep 600", reason="x", timeout=2)
    began = time.monotonic()
    preview = session.preview(1)
    assert preview.timed_out and "timed out" in preview.summary
    session.approve()
    error = one_step(session).error or ""
    assert "timed out" in error and "nothing of its layer was applied" in error, error
    assert time.monotonic() - began < 30
    assert snapshot(root) == start


def test_writing_through_a_symlink_out_is_said_not_held(tmp_path: Path) -> None:
    """A workspace symlink to a folder outside: the preview cannot reach it (the sandbox shows
    nothing outside), and the approved run's record says what no layer holds."""
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "ws"
    build_workspace(root, {})
    (root / "out").symlink_to(outside)
    session = make_session(root)
    session.propose.shell("echo x > out/f.txt", reason="x")
    preview = session.preview(1)
    assert preview.exit_code != 0 and not preview.changes
    assert not (outside / "f.txt").exists()
    session.approve()
    assert "changes outside the workspace" in (one_step(session).error or "") + str(
        session.current_plan().results[-1].message  # type: ignore[union-attr]
    )


def _layer_with(tmp_path: Path, make: Any) -> Path:
    root = tmp_path / "ws"
    build_workspace(root, {})
    upper = tmp_path / "upper"
    upper.mkdir()
    make(upper)
    return root


@pytest.mark.parametrize(
    ("what", "make"),
    [
        ("hard link", lambda up: os.link(up.parent / "elsewhere", up / "h")),
        ("character device", lambda up: os.mknod(up / "d", stat.S_IFCHR | 0o600, os.makedev(1, 3))),
        ("block device", lambda up: os.mknod(up / "b", stat.S_IFBLK | 0o600, os.makedev(7, 0))),
    ],
)
def test_a_layer_holding_links_out_or_devices_is_refused(
    tmp_path: Path, what: str, make: Any
) -> None:
    if os.geteuid() != 0 and "device" in what:
        pytest.skip("making a device node needs root")
    (tmp_path / "elsewhere").write_text("outside the layer\n")
    root = _layer_with(tmp_path, make)
    with pytest.raises(LayerRefused, match=what):
        read_layer(root, tmp_path / "upper")


def test_without_overlays_shell_steps_run_as_before_and_plan_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        "planbook.engine.executor.shell_layer.overlay_probe",
        lambda: OverlayStatus(False, "no overlays: user namespaces are off"),
    )
    session = make_session(tmp_path)
    session.propose.shell("echo a > a.txt", reason="x")
    session.propose.shell("echo b > b.txt", reason="y")
    text = session.render_text()
    assert text.count("previews and shell rollback are off: no overlays: user namespaces") == 1
    assert session.preview(1).problem.startswith("preview not possible: no overlays")
    assert session.approve().ok
    assert (tmp_path / "a.txt").read_text() == "a\n"
    assert "not undone by rollback" in session.checkpoints()[-1].label


def test_planbook_preview_on_a_notebook_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "n.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), path)
    (tmp_path / "a.txt").write_text("one\n")
    session = Session(
        FileNotebook(path), Workspace(tmp_path, protected=(path,)), notebook_path=path
    )
    session.propose.shell("sed -i s/one/ONE/ a.txt", reason="x")
    assert cli.main(["preview", str(path), "1"]) == 0
    out = capsys.readouterr().out
    assert "# preview (exit 0): 1 changed" in out and "+ONE" in out and "-one" in out
    assert (tmp_path / "a.txt").read_text() == "one\n"
    shown = subprocess.run(
        [sys.executable, "-m", "planbook", "show", str(path)], capture_output=True, text=True
    )
    assert "+ONE" in shown.stdout  # kept on the step, for every review


def test_short_local_commands_are_previewed_when_staged_unless_turned_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("planbook.sessions.proposer.auto_preview_on", auto_preview_on)
    (tmp_path / "a.txt").write_text("one\n")
    session = make_session(tmp_path)
    quick = session.propose.shell("sed -i s/one/ONE/ a.txt", reason="x")
    assert quick.preview is not None and [c.path for c in quick.preview.changes] == ["a.txt"]
    assert session.propose.shell("python -c 'print(1)'", reason="x").preview is None
    (tmp_path / "planbook.toml").write_text("[preview]\nauto = false\n")
    assert session.propose.shell("sed -i s/one/TWO/ a.txt", reason="x").preview is None
    assert (tmp_path / "a.txt").read_text() == "one\n"


def test_a_symlink_left_in_the_layer_is_not_followed_when_the_layer_is_removed(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o755)
    outside.chmod(0o755)
    root = tmp_path / "ws"
    build_workspace(root, {})
    session = make_session(root)
    session.propose.shell("ln -s ../outside lnk", reason="x")
    assert session.preview(1).problem.startswith("refused")
    session.approve()
    assert "symlink" in (one_step(session).error or "")
    assert stat.S_IMODE(outside.stat().st_mode) == 0o755
