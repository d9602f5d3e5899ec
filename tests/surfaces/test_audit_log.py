"""``planbook log`` says who approved each step (user@host, and how) and who proposed it when
an MCP client did, in text and in ``--json`` (issue 23, section 4). Run as a person runs it."""

from __future__ import annotations

import getpass
import json
import socket
import subprocess
import sys
from pathlib import Path

from tests.conftest import make_notebook, reopen


def planbook_log(path: Path, *extra: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "planbook", "log", str(path), *extra],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_log_names_who_approved_and_which_client_proposed(tmp_path: Path) -> None:
    path = make_notebook(tmp_path / "nb.ipynb", ["x = 1"])
    session = reopen(path)
    session.proposing_as("claude-code 2.1.0").write_file("a.txt", "a\n", reason="from MCP")
    session.propose.write_file("b.txt", "b\n", reason="from the kernel")
    assert session.approve().ok
    person = f"{getpass.getuser()}@{socket.gethostname()}"

    rows = json.loads(planbook_log(path, "--json"))
    [approved] = [r for r in rows if r["event"] == "approved"]
    assert approved["person"] == person
    assert approved["origin"] == "claude-code 2.1.0"  # one of its two steps came from MCP
    done = [r for r in rows if r["event"] == "done"]
    assert [r["origin"] for r in done] == ["claude-code 2.1.0", ""]
    staged = [r for r in rows if r["event"] == "staged"]
    assert [r["origin"] for r in staged] == ["claude-code 2.1.0", ""]

    text = planbook_log(path)
    approved_line = next(line for line in text.splitlines() if " approved " in line)
    assert person in approved_line and "proposed by claude-code 2.1.0" in approved_line


def test_a_received_approvers_name_cannot_steer_the_terminal(tmp_path: Path) -> None:
    path = make_notebook(tmp_path / "nb.ipynb", ["x = 1"])
    session = reopen(path)
    session.proposing_as("evil\x1b[2K\rclient").write_file("a.txt", "a\n", reason="r")
    assert session.approve().ok
    data = json.loads(path.read_text())
    plan = next(iter(data["metadata"]["planbook"]["plans"].values()))
    plan["approvals"][0]["person"] = "mallory\x1b[8m@hidden"
    path.write_text(json.dumps(data))
    text = planbook_log(path)
    assert "\x1b" not in text and "\r" not in text
    assert "mallory" in text and "client" in text
