"""Where no sandbox can start, every command is staged and the person is told why.

Unavailability is simulated honestly: PATH without bwrap, the probe pointed at a missing
binary, and a bwrap that cannot start (as where user namespaces are off).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import ApprovalRequired

import planbook
from planbook.agent.tools_read import run_read_only_shell
from planbook.agent.tools_write import shell as shell_tool
from planbook.documents.memory import MemoryNotebook
from planbook.present.safe import md_text
from planbook.workspace.files import Workspace
from planbook.workspace.sandbox import probe
from tests.support.attack import tool_context


def _ctx(root: Path) -> Any:
    return tool_context(planbook.Session(MemoryNotebook(cells=[]), Workspace(root)))


@pytest.fixture
def no_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    status = probe()
    assert not status.available
    return status.reason


def test_without_bwrap_every_command_is_staged_and_the_reason_shown(
    tmp_path: Path, no_bwrap: str
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("hello\n")
    ctx = _ctx(root)
    session = ctx.deps.session
    assert "`bwrap` was not found" in no_bwrap
    answers = [
        asyncio.run(run_read_only_shell(ctx, "ls")),
        asyncio.run(run_read_only_shell(ctx, "cat a.txt")),
        asyncio.run(shell_tool(ctx, "git status", reason="look")),
    ]
    for answer in answers:
        assert answer.startswith("not run at once") and "Queued as step" in answer
        assert "hello" not in answer  # it did not run
    plan = session.current_plan()
    assert plan is not None
    assert [s.operation.command for s in plan.steps] == ["ls", "cat a.txt", "git status"]  # type: ignore[union-attr]
    assert all(s.status == "pending" for s in plan.steps)
    # The person sees why, once: `%plan` (the panel's text and header) and the session.
    assert [w for w in session.warnings if no_bwrap in w] == [session.warnings[-1]]
    from planbook.surfaces.widget.panel import ReviewPanel

    panel = ReviewPanel.for_session(session)
    data, _ = panel._repr_mimebundle_()
    # markdown shows the reason as text: its backticks and brackets escaped, never markup
    assert no_bwrap in data["text/plain"] and md_text(no_bwrap) in data["text/markdown"]
    panel.refresh()
    assert any(no_bwrap in w for w in panel.view["header"]["warnings"])


def test_without_bwrap_ask_mode_asks(tmp_path: Path, no_bwrap: str) -> None:
    ctx = _ctx(tmp_path)
    ctx.deps.session.set_mode("ask")
    with pytest.raises(ApprovalRequired):
        asyncio.run(run_read_only_shell(ctx, "ls"))


def test_a_missing_binary_and_a_bwrap_that_cannot_start(tmp_path: Path) -> None:
    missing = probe(str(tmp_path / "nowhere" / "bwrap"))
    assert not missing.available and "not found" in missing.reason
    broken = tmp_path / "bwrap"
    broken.write_text(
        "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"
    )
    broken.chmod(0o755)
    status = probe(str(broken))
    assert not status.available
    assert "uid map: Permission denied" in status.reason
