"""`planbook show` lists the questions MCP clients asked and `planbook answer` answers them: by
subprocess, as a person runs them; a question's text is made visible (no control character
reaches the terminal); a bad answer is one line and changes nothing."""

from __future__ import annotations

from pathlib import Path

import nbformat

from planbook.sessions.open_file import editing_session
from tests.support.cli import run_planbook as planbook
from tests.support.engine import write_notebook

CLIENT = "codex 0.9 (MCP)"


def asked(folder: Path, question: str, options: list[str]) -> Path:
    path = write_notebook(folder / "nb.ipynb", ["x = 1"])
    editing_session(path, "a test").ask_person(question, options, origin=CLIENT)
    return path


def test_show_lists_the_question_escaped_and_answer_records_it(tmp_path: Path) -> None:
    path = asked(tmp_path, "Wipe \x1b[2Jthe cache?\u202e", ["yes", "no"])
    shown = planbook("show", str(path))
    assert shown.returncode == 0, shown.stderr
    assert "\x1b" not in shown.stdout and "\u202e" not in shown.stdout
    assert "q1 (from codex 0.9 (MCP)): Wipe \\x1b[2Jthe cache?\\u202e [yes / no]" in shown.stdout
    assert "answer with `planbook answer " in shown.stdout

    done = planbook("answer", str(path), "q1", "No")
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith(": no")  # the option, as it was offered
    (stored,) = nbformat.read(path, as_version=4).metadata["planbook"]["questions"]
    assert (stored["state"], stored["answer"], stored["choice"]) == ("answered", "no", "no")
    assert stored["answered_by"] and stored["signature"].startswith("hmac-sha256:")
    after = planbook("show", str(path))
    assert after.returncode == 0, after.stderr
    assert (
        after.stdout.strip()
        == f"{path}: no plan yet, and every question asked over MCP is answered"
    )


def test_a_bad_answer_is_one_line_and_changes_nothing(tmp_path: Path) -> None:
    path = asked(tmp_path, "Keep going?", [])
    before = path.read_bytes()
    unknown = planbook("answer", str(path), "q7", "yes")
    assert unknown.returncode == 2
    assert unknown.stderr.count("\n") == 1 and "no question 'q7' (q1)" in unknown.stderr
    blank = planbook("answer", str(path), "q1", "  ")
    assert blank.returncode == 2 and "say something to answer q1" in blank.stderr
    assert path.read_bytes() == before
    assert planbook("answer", str(path), "q1", "yes,", "carefully").returncode == 0
    again = planbook("answer", str(path), "q1", "no")
    assert again.returncode == 2 and "answered already" in again.stderr
