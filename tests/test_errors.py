"""Errors name their fix in the words of the surface the person uses: magics, Python, CLI."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from planbook import errors
from planbook.errors import NothingToDo, UnknownCheckpoint, UnknownStep, UsageMistake, speak


@pytest.fixture(autouse=True)
def _python_surface() -> Iterator[None]:
    before = errors._spoken[0]
    errors.speak_as("api")
    yield
    errors.speak_as(before)


def test_python_errors_name_python_calls() -> None:
    assert "see them with `print(pb.render_text())`" in str(UnknownStep(9, 3))
    assert "list them with `print(pb.checkpoints_text())`" in str(UnknownCheckpoint("cp-x"))
    message = str(UsageMistake("there is no plan yet: stage a step with `%%propose` first"))
    assert message == "there is no plan yet: stage a step with `pb.propose` first"


def test_the_magics_keep_their_own_words() -> None:
    errors.speak_as("magics")
    assert str(UnknownStep(9, 3)).endswith("see them with `%plan`")


def test_the_cli_names_commands_on_the_notebook() -> None:
    exc = UsageMistake("use `%rollback --force` to do it anyway")
    assert exc.said_to("cli", notebook="a.ipynb") == (
        "use `planbook rollback a.ipynb --force` to do it anyway"
    )


@pytest.mark.parametrize(
    ("magic", "call"),
    [
        ('`%plan revise "use bars"`', '`pb.revise("use bars")`'),
        ("`%rollback cp-1`", '`pb.rollback("cp-1")`'),
        ("`%%propose --after <cell id>`", "`pb.propose.insert_cell(source, after=<cell id>)`"),
        ("`%answer d1 2`", "`%answer d1 2`"),  # nothing to say instead: kept
    ],
)
def test_fixes_with_arguments(magic: str, call: str) -> None:
    assert speak(f"try {magic}", "api") == f"try {call}"


def test_nothing_to_do_is_a_usage_mistake() -> None:
    # Surfaces that catch UsageMistake keep working; the CLI maps it to its own exit code.
    assert issubclass(NothingToDo, UsageMistake)


def test_a_plain_script_hears_python(tmp_path: Path) -> None:
    """No magics in sight: the message a script prints names the API, never `%%propose`."""
    import nbformat

    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "empty.ipynb")
    script = (
        "import planbook\n"
        "pb = planbook.session(notebook='empty.ipynb')\n"
        "try:\n"
        "    pb.approve()\n"
        "except planbook.errors.PlanbookError as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "there is no plan yet: stage a step with `pb.propose` first\n"
