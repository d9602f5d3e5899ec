"""The `planbook` command line as its parser reads it: every subcommand takes the options
docs/cli.md shows, each lands on the subcommand's function with the documented defaults, and a
bad value is one line and exit code 2 with the notebook untouched."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import nbformat
import pytest

from planbook import errors
from planbook.errors import CliError, PlanbookError
from planbook.sessions.open_file import editing_session
from planbook.surfaces.cli import commands, demo, serve_mcp, trust
from planbook.surfaces.cli.exit_codes import EXIT_NOT_NOTEBOOK, EXIT_USAGE
from planbook.surfaces.cli.main import main
from planbook.surfaces.cli.parser import build_parser

DOCS = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


@pytest.fixture
def planned(tmp_path: Path) -> Path:
    """A notebook file with one pending step."""
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x = 1")
    cell["id"] = "first"
    nb.cells = [cell]
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, path)
    editing_session(path, "a test").propose.insert_cell("x + 1", after="first", reason="more")
    return path


def test_every_subcommand_runs_its_own_function() -> None:
    runs = {name: p.get_default("run") for name, p in subparsers().items()}
    assert runs == {
        "show": commands.cmd_show,
        "approve": commands.cmd_approve,
        "reject": commands.cmd_reject,
        "rollback": commands.cmd_rollback,
        "preview": commands.cmd_preview,
        "takeover": commands.cmd_takeover,
        "log": commands.cmd_log,
        "gc": commands.cmd_gc,
        "strip": commands.cmd_strip,
        "trust": trust.cmd_trust,
        "answer": commands.cmd_answer,
        "mcp": serve_mcp.cmd_mcp,
        "demo": demo.cmd_demo,
    }


def test_every_option_the_docs_show_is_one_the_parser_takes() -> None:
    """The command table of docs/cli.md: `planbook CMD NB [--opt ...]`, one row a command."""
    text = DOCS.read_text(encoding="utf-8")
    rows = re.findall(r"^\| `planbook (\w+)([^|`]*(?:\\\|[^|`]*)*)` \|", text, re.M)
    parsers = subparsers()
    assert {name for name, _ in rows} == set(parsers)
    for name, synopsis in rows:
        taken = set(parsers[name]._option_string_actions)
        shown = set(re.findall(r"--[a-z][a-z-]*", synopsis))
        assert shown <= taken, (name, shown - taken)
        # every option the command takes is shown (--color has its --no-color twin)
        assert taken - {"-h", "--help", "--no-color"} <= shown, (name, taken - shown)


def test_approve_takes_each_documented_option() -> None:
    args = parse(
        "approve", "nb.ipynb", "--steps", "1,3-5", "--dry-run", "--no-rerun", "--by", "ci bot"
    )
    assert (args.notebook, args.steps, args.first) == ("nb.ipynb", "1,3-5", None)
    assert (args.dry_run, args.no_rerun, args.by, args.quiet) == (True, True, "ci bot", False)
    assert args.timeout == 600.0  # each re-run cell's limit by default
    counted = parse("approve", "nb.ipynb", "--first", "2", "--timeout", "5", "--quiet")
    assert (counted.first, counted.steps, counted.timeout, counted.quiet) == (2, None, 5.0, True)


def test_the_other_subcommands_take_theirs() -> None:
    assert parse("show", "nb.ipynb").color is None  # colour when writing to a terminal
    assert parse("show", "nb.ipynb", "--color").color is True
    assert parse("show", "nb.ipynb", "--no-color").color is False
    assert parse("reject", "nb.ipynb").steps is None  # every pending step
    assert parse("reject", "nb.ipynb", "--steps", "2").steps == "2"
    back = parse("rollback", "nb.ipynb")
    assert (back.checkpoint, back.force) == (None, False)  # the last step
    back = parse("rollback", "nb.ipynb", "3", "--force")
    assert (back.checkpoint, back.force) == ("3", True)
    assert parse("log", "nb.ipynb", "--json").json is True
    gc = parse("gc", "nb.ipynb", "--keep", "3", "--keep-plans", "1")
    assert (gc.keep, gc.keep_plans) == (3, 1)
    assert (parse("gc", "nb.ipynb").keep, parse("gc", "nb.ipynb").keep_plans) == (None, None)
    assert parse("strip").notebook is None  # a git clean filter: stdin to stdout
    assert parse("strip", "-").notebook == "-"
    answered = parse("answer", "nb.ipynb", "q1", "only", "2023")
    assert (answered.question, answered.answer) == ("q1", ["only", "2023"])
    made = parse("demo", "--dir", "here", "--no-color")
    assert (made.dir, made.color) == ("here", False)


def test_a_bad_step_spec_is_one_line_and_exit_2(
    planned: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = planned.read_bytes()
    assert main(["approve", str(planned), "--steps", "abc"]) == EXIT_USAGE
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("planbook: ") and err.count("\n") == 1
    assert "abc" in err
    assert main(["reject", str(planned), "--steps", "abc"]) == EXIT_USAGE
    assert capsys.readouterr().err.count("\n") == 1
    assert planned.read_bytes() == before


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["approve", "nb.ipynb", "--first", "abc"], "argument --first: invalid int value: 'abc'"),
        (["approve", "nb.ipynb", "--timeout", "soon"], "argument --timeout: invalid float value"),
        (["gc", "nb.ipynb", "--keep", "all"], "argument --keep: invalid int value: 'all'"),
        (["approve", "nb.ipynb", "--bogus"], "unrecognized arguments: --bogus"),
        (["show"], "the following arguments are required: notebook"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
    ],
)
def test_a_value_argparse_refuses_exits_2_naming_it(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == EXIT_USAGE
    *usage, last = capsys.readouterr().err.strip().split("\n")
    assert usage and usage[0].startswith("usage: planbook")  # argparse's usage, then the error
    assert last.startswith("planbook") and said in last


def test_a_cli_error_is_a_planbook_error_said_as_written() -> None:
    """CliError belongs to the one hierarchy and carries its exit code; its message is in the
    command's words already, so no surface rewrites it (even a backticked magic stays)."""
    exc = CliError(EXIT_NOT_NOTEBOOK, "nb.ipynb: not a notebook; see `%plan cells`")
    assert isinstance(exc, PlanbookError) and exc.code == EXIT_NOT_NOTEBOOK
    before = errors._spoken[0]
    errors.speak_as("api")
    try:
        assert str(exc) == "nb.ipynb: not a notebook; see `%plan cells`"
    finally:
        errors.speak_as(before)
    assert exc.said_to("cli", notebook="x.ipynb") == str(exc)
