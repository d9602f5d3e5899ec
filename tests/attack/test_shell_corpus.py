"""The shell corpus: write-like commands through the agent's read-only shell change nothing.

Every entry of shell_corpus.toml goes through the agent's real shell path (the tool functions
the model calls, ``run_read_only_shell`` and ``shell``, with a real Session in plan mode) and,
to test the wall and not only the first opinion, straight into the OS sandbox with the
classifier skipped. The filesystem decides: a snapshot of the workspace, a canary folder
outside it and a file beside it, before and after each command; and a loopback listener
counts connections. Read-only entries must still work: their output comes back.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import planbook
from planbook.agent.tools_read import run_read_only_shell
from planbook.agent.tools_write import shell as shell_tool
from planbook.documents.memory import MemoryNotebook
from planbook.engine.rules.classifier import classify
from planbook.workspace.files import Workspace
from planbook.workspace.sandbox import probe
from tests.support.attack import tool_context
from tests.support.listeners import CountingListener

CORPUS = tomllib.loads((Path(__file__).with_name("shell_corpus.toml")).read_text("utf-8"))
FAMILIES = sorted(CORPUS["write"])
SECRET = "canary-secret-7f3a"

pytestmark = pytest.mark.skipif(
    not probe().available, reason=f"the sandbox is the point here: {probe().reason}"
)


Listener = CountingListener


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    served = Listener()
    yield served
    served.close()


def build(base: Path) -> Path:
    """A small project with a git repository, scripts that write, and a canary outside."""
    if base.exists():
        shutil.rmtree(base)
    ws, canary = base / "ws", base / "canary"
    (ws / "sub").mkdir(parents=True)
    canary.mkdir()
    (canary / "secret.txt").write_text(SECRET + "\n")
    (base / "outside.txt").write_text("outside\n")
    files = {
        "a.txt": "hello\n",
        "b.txt": "b\na\n",
        "keep.txt": "keep\n",
        "data.csv": "col,x\n1,2\n",
        "sub/c.txt": "c\n",
        "script.sh": "#!/bin/sh\ntouch pwned.txt\nrm -f a.txt\n",
        "script.py": "open('pwned.txt', 'w').write('x')\n",
        "evil.sh": '#!/bin/sh\ntouch pwned.txt\ncat "$1"\n',
    }
    for name, text in files.items():
        (ws / name).write_text(text)
    for name in ("script.sh", "evil.sh"):
        (ws / name).chmod(0o755)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "HOME": str(base)}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=ws, env=env, check=True, capture_output=True)
    return ws


def snapshot(base: Path) -> dict[str, tuple[int, bytes]]:
    out: dict[str, tuple[int, bytes]] = {}
    for dirpath, dirnames, filenames in os.walk(base):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            data = p.read_bytes() if p.is_file() and not p.is_symlink() else b""
            out[str(p.relative_to(base))] = (st.st_mode, data)
    return out


def substitute(command: str, base: Path, port: int) -> str:
    return (
        command.replace("@WS@", str(base / "ws"))
        .replace("@CANARY@", str(base / "canary"))
        .replace("@PORT@", str(port))
    )


def context(ws: Path) -> Any:
    session = planbook.Session(MemoryNotebook(cells=[]), Workspace(ws))
    assert session.mode == "plan"
    return tool_context(session)


@dataclass
class Tally:
    commands: int = 0
    misjudged: list[str] = field(default_factory=list)
    bypasses: list[str] = field(default_factory=list)


def through_the_tools(ctx: Any, command: str) -> str:
    """The agent's two ways to run a command: the read-only tool and the `shell` tool (which
    runs a command it thinks read-only at once, and stages the rest in plan mode)."""
    first = asyncio.run(run_read_only_shell(ctx, command))
    second = asyncio.run(shell_tool(ctx, command, reason="corpus"))
    return first + second


def straight_into_the_sandbox(ws: Path, command: str) -> str:
    """The wall itself: the classifier skipped, as if it had said "read-only" by mistake."""
    result = Workspace(ws).run_shell(command, timeout=3, sandboxed=True)
    return result.stdout + result.stderr


def changed(base: Path, listener: Listener, run: Any, commands: list[str]) -> list[str]:
    """Run ``commands`` (several at once, to keep the suite fast); if anything changed, run
    them again one by one on a fresh copy to name the culprits."""
    before, connections = snapshot(base), listener.count
    with ThreadPoolExecutor(max_workers=4) as pool:
        outputs = list(pool.map(run, commands))
    assert not any(SECRET in out for out in outputs)
    if snapshot(base) == before and listener.count == connections:
        return []
    culprits = []
    for command in commands:
        build(base)
        before, connections = snapshot(base), listener.count
        run(command)
        if snapshot(base) != before or listener.count != connections:
            culprits.append(command)
    build(base)
    return culprits or ["(only together)"]


def bites(base: Path, listener: Listener, commands: list[str]) -> str | None:
    """The first command that changes something when run with no sandbox (on a fresh copy)."""
    for command in commands:
        before, connections = snapshot(base), listener.count
        Workspace(base / "ws").run_shell(command, timeout=3)
        if snapshot(base) != before or listener.count != connections:
            build(base)
            return command
    return None


@pytest.mark.parametrize("family", FAMILIES)
def test_write_like_commands_change_nothing(
    family: str, tmp_path: Path, listener: Listener
) -> None:
    base = tmp_path / "attack"
    ws = build(base)
    commands = [substitute(raw, base, listener.port) for raw in CORPUS["write"][family]["commands"]]
    ctx = context(ws)
    tally = Tally(commands=len(commands))
    tally.misjudged = [c for c in commands if classify(c).read_only]
    tally.bypasses += changed(base, listener, lambda c: through_the_tools(ctx, c), commands)
    tally.bypasses += changed(base, listener, lambda c: straight_into_the_sandbox(ws, c), commands)
    # The check can fail: without the sandbox, some command of the family does change things.
    assert bites(base, listener, commands), f"no command of {family} writes even unsandboxed"
    print(
        f"\nshell corpus [{family}]: {tally.commands} commands, "
        f"{len(tally.misjudged)} misjudged read-only by the classifier (held by the sandbox), "
        f"{len(tally.bypasses)} bypasses"
    )
    assert tally.bypasses == [], "\n".join(tally.bypasses)


def test_the_corpus_is_big_and_varied() -> None:
    writes = [c for f in FAMILIES for c in CORPUS["write"][f]["commands"]]
    assert len(writes) >= 300 and len(FAMILIES) >= 12
    assert len(CORPUS["read"]["commands"]) >= 40


def test_read_only_commands_still_work(tmp_path: Path, listener: Listener) -> None:
    base = tmp_path / "attack"
    ws = build(base)
    ctx = context(ws)
    entries = CORPUS["read"]["commands"]

    def run(raw: str) -> str:
        return asyncio.run(run_read_only_shell(ctx, substitute(raw, base, listener.port)))

    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(run, [raw for raw, _ in entries]))
    refused = [
        f"{raw!r} -> {answer[:200]!r}"
        for (raw, expected), answer in zip(entries, answers, strict=True)
        if not answer.startswith("[exit 0]") or expected not in answer
    ]
    print(f"\nshell corpus [read]: {len(entries)} commands, {len(refused)} refused")
    assert refused == [], "\n".join(refused)


def test_reading_outside_the_workspace_shows_nothing(tmp_path: Path) -> None:
    base = tmp_path / "attack"
    ctx = context(build(base))
    for command in ("cat ../canary/secret.txt", f"cat {base}/canary/secret.txt", "ls ..", "ls /"):
        answer = asyncio.run(run_read_only_shell(ctx, command))
        assert SECRET not in answer and "canary" not in answer.split("[stderr]")[0], answer
    # `read_file` refuses the same file, so both read tools agree.
    with pytest.raises(planbook.errors.OutsideWorkspace):
        ctx.deps.session.workspace.read_text("../canary/secret.txt")


@pytest.mark.parametrize("command", ["cat /dev/zero", "yes", "head -c 50000000 /dev/urandom"])
def test_endless_output_is_capped_and_stopped(tmp_path: Path, command: str) -> None:
    ws = Workspace(tmp_path)
    result = ws.run_shell(command, timeout=20, sandboxed=True)
    assert not result.timed_out  # stopped by the cap, long before the deadline
    assert result.returncode is None
    assert "output over 1,048,576 bytes: the command was stopped" in result.stderr
    assert len(result.stdout) < 70_000  # and the agent sees a clipped part of it
