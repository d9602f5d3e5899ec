"""A received plan full of terminal escapes and bidi overrides, read in a real kernel through
``%plan`` and its verbs, and through ``planbook show`` as a separate process: every byte the
person sees is what is stored, with each hidden character written as its escape."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.attack.payloads import CONTROL
from tests.kernel_helper import kernel
from tests.support.attack import sender_session
from tests.support.markup import raw_controls

JOINED = " | ".join(payload for _, payload in CONTROL)


def received_notebook(root: Path) -> Path:
    """Made by someone else's planbook: the task, the summary, a reason, a cell's new source
    and a shell command all carry the payloads."""
    path, sender = sender_session(root)
    sender.new_plan(JOINED)
    sender.propose.edit_cell("c1", f"x = 2  # {JOINED}", reason=JOINED)
    sender.propose.shell(f"echo '{JOINED}'", reason=JOINED)
    sender.set_summary(JOINED)
    return path


@pytest.mark.kernel
def test_plan_and_its_verbs_show_escapes_in_a_kernel(tmp_path: Path) -> None:
    path = received_notebook(tmp_path)
    with kernel(tmp_path, JPY_SESSION_NAME=str(path)) as k:
        loaded = k.run("%load_ext planbook")
        assert loaded.status == "ok", loaded.text
        for code in ("%plan", "%plan history", "%plan cells", "print(repr(planbook_plan()))"):
            if code.startswith("print"):
                k.run("import planbook\ndef planbook_plan(): return planbook.session().plan")
            reply = k.run(code)
            assert reply.status == "ok", (code, reply.text)
            shown = (
                reply.stdout
                + reply.stderr
                + "".join(
                    str(value)
                    for output in reply.outputs
                    for mime, value in output.get("data", {}).items()
                    if mime in ("text/plain", "text/markdown")
                )
            )
            assert raw_controls(shown) == [], code
            assert "\\x1b[2K\\r" in shown or code != "%plan", shown[:400]
            if code == "%plan":
                assert "\\u202e" in shown and "\\x00" in shown


def test_planbook_show_writes_no_raw_escape_byte(tmp_path: Path) -> None:
    path = received_notebook(tmp_path)
    for argv in (["show", str(path)], ["show", "--color", str(path)], ["log", str(path)]):
        result = subprocess.run(
            [sys.executable, "-m", "planbook", *argv], capture_output=True, timeout=120
        )
        assert result.returncode == 0, result.stderr
        out = result.stdout.decode("utf-8")
        if "--color" in argv:  # planbook's own colours are the only sequences
            out = out.replace("\x1b[32m", "").replace("\x1b[31m", "").replace("\x1b[36m", "")
            out = out.replace("\x1b[0m", "")
        assert raw_controls(out) == [], argv
        if argv[0] == "show":
            assert "\\x1b]8;;http://evil.example/\\x1b\\click" in out
            assert "\\u202e" in out and "\\u2066" in out and "\\b" in out
