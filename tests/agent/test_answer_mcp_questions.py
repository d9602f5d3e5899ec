"""`%answer` in a real kernel lists the questions MCP clients asked beside the agent's own
decisions and answers them: the answer lands in the notebook, signed, where the asking
client's wait_for_review (another process) finds it."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from planbook.sessions.open_file import editing_session
from tests.kernel_helper import kernel
from tests.support.engine import write_notebook

pytestmark = pytest.mark.kernel

CLIENT = "cursor 1.4 (MCP)"


def test_answer_lists_and_answers_mcp_questions(tmp_path: Path) -> None:
    path = write_notebook(tmp_path / "sales.ipynb", ["x = 1"])
    with kernel(tmp_path, JPY_SESSION_NAME=str(path)) as k:
        assert k.run("%load_ext planbook").status == "ok"
        assert "no open decision" in k.run("%answer").stdout
        # an agent outside the kernel asks while the kernel runs (as the MCP server does)
        outside = editing_session(path, "planbook MCP")
        outside.ask_person("Use \x1b[31mthe 2024 prices?", ["yes", "no"], origin=CLIENT)
        outside.ask_person("Anything else?", origin=CLIENT)

        listed = k.run("%answer")
        assert listed.status == "ok", listed.text
        lines = listed.stdout.strip().splitlines()
        assert lines == [
            f"q1 (from {CLIENT}): Use \\x1b[31mthe 2024 prices? [yes / no]",
            f"q2 (from {CLIENT}): Anything else? [free text]",
        ]

        chosen = k.run("%answer q1 2")
        assert chosen.stdout.strip() == f"planbook: q1 -> no (answered for {CLIENT})"
        typed = k.run("%answer q2 drop the test rows first")
        assert "q2 -> drop the test rows first" in typed.stdout
        again = k.run("%answer q1 yes")
        assert again.status == "error" and "question q1 is answered already" in again.text

    stored = nbformat.read(path, as_version=4).metadata["planbook"]["questions"]
    assert [(q["id"], q["answer"], q["state"]) for q in stored] == [
        ("q1", "no", "answered"),
        ("q2", "drop the test rows first", "answered"),
    ]
    assert all(editing_session(path, "t").answered_here(q) for q in outside.person_questions())
