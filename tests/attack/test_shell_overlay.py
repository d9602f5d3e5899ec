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
import tarfile
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from planbook.model.checkpoint import FileSnapshot
from planbook.workspace.overlay import overlay_probe
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
