"""planbook reads a headless tool's command line by hand (documents/headless_run.py: importing the
tools' parsers at `%load_ext` costs seconds); here every reading is checked against the tool's
own parser (nbconvert's and nbclient's traitlets apps, papermill's click command) on real files:
the notebook the run executes and the file it writes at the end must be the same."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from planbook.documents.headless_run import HeadlessRun, Unnamed, parse_command

NBCONVERT = ["python", "/venv/bin/jupyter-nbconvert"]
PAPERMILL = ["python", "/venv/bin/papermill"]
EXECUTE = ["python", "/venv/bin/jupyter-execute"]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "sub").mkdir()
    (tmp_path / "out").mkdir()
    for name in ("nb.ipynb", "sub/deep.ipynb", "other.ipynb"):
        nbformat.write(nbformat.v4.new_notebook(), tmp_path / name)
    return tmp_path


def by_nbconvert(args: list[str], cwd: Path) -> tuple[Path, Path | None]:
    """What nbconvert itself makes of ``args``: its notebook and the notebook file it writes."""
    from nbconvert.exporters import get_exporter
    from nbconvert.nbconvertapp import NbConvertApp

    app = NbConvertApp()
    app.parse_command_line(args)
    here = Path.cwd()
    os.chdir(cwd)
    try:
        app.init_notebooks()
        app.init_writer()
    finally:
        os.chdir(here)
    (notebook,) = app.notebooks
    path = (cwd / notebook).resolve()
    if app.export_format != "notebook" or "stdout" in app.writer_class.lower():
        return path, None
    exporter = get_exporter(app.export_format)()
    base, ext = os.path.splitext(app.output_base)
    if ext == exporter.file_extension:
        app.output_base = base
    resources = app.init_single_notebook_resources(str(path))
    name = resources["unique_key"]
    if app.use_output_suffix and app.output_base == "{notebook_name}":
        name += ".nbconvert"
    folder = app.writer.build_directory or str(path.parent)
    return path, ((cwd / folder) / f"{name}.ipynb").resolve()


def by_papermill(args: list[str], cwd: Path) -> tuple[Path, Path | None]:
    from papermill.cli import papermill as command

    params = command.make_context("papermill", list(args), resilient_parsing=True).params
    return (cwd / params["notebook_path"]).resolve(), (cwd / params["output_path"]).resolve()


def ours(tool: list[str], args: list[str], cwd: Path) -> tuple[Path, Path | None]:
    run = parse_command([*tool, *args], cwd)
    assert isinstance(run, HeadlessRun), run
    return run.notebook, run.writes


NBCONVERT_LINES = [
    "--to notebook --execute nb.ipynb",
    "--execute --to=notebook nb",
    "--execute --inplace nb.ipynb",
    "--to notebook --execute nb.ipynb --output nb",
    "--to notebook --execute nb.ipynb --output nb.ipynb",
    "--to notebook --execute nb.ipynb --output run.ipynb",
    "--to notebook --execute sub/deep.ipynb --output-dir out",
    "--to notebook --execute sub/deep.ipynb --output-dir sub",
    "--to notebook --execute sub/deep.ipynb --output-dir=. --output deep",
    "--to html --execute nb.ipynb",
    "--to notebook --execute --stdout nb.ipynb",
    "--execute --to notebook --NbConvertApp.output_base=nb nb.ipynb",
    "--execute --to notebook --NbConvertApp.use_output_suffix=False nb.ipynb",
    "--execute --to notebook --FilesWriter.build_directory out nb.ipynb",
    "--execute --to notebook --ExecutePreprocessor.timeout=60 --allow-errors nb.ipynb",
    "--execute --to notebook --log-level WARN --output {notebook_name}-run nb.ipynb",
]


@pytest.mark.parametrize("line", NBCONVERT_LINES)
def test_nbconvert_lines_read_as_nbconvert_reads_them(folder: Path, line: str) -> None:
    args = line.split()
    assert ours(NBCONVERT, args, folder) == by_nbconvert(args, folder)


def test_the_readings_that_matter(folder: Path) -> None:
    run = parse_command([*NBCONVERT, "--execute", "--inplace", "nb.ipynb"], folder)
    assert isinstance(run, HeadlessRun) and run.overwrites
    run = parse_command([*NBCONVERT, "--to", "notebook", "--execute", "nb.ipynb"], folder)
    assert isinstance(run, HeadlessRun) and not run.overwrites
    assert run.writes == folder / "nb.nbconvert.ipynb"
    run = parse_command(["python", "-m", "nbconvert", "--execute", "--inplace", "nb"], folder)
    assert isinstance(run, HeadlessRun) and run.overwrites
    run = parse_command([*PAPERMILL, "nb.ipynb", "nb.ipynb"], folder)
    assert isinstance(run, HeadlessRun) and run.overwrites
    run = parse_command([*EXECUTE, "--inplace", "nb.ipynb"], folder)
    assert isinstance(run, HeadlessRun) and run.overwrites
    run = parse_command([*EXECUTE, "nb.ipynb", "--output", "x"], folder)
    assert isinstance(run, HeadlessRun) and run.writes == folder / "x.ipynb"
    absolute = str(folder / "sub" / "deep.ipynb")
    run = parse_command([*NBCONVERT, "--execute", "--to", "notebook", absolute], Path("/"))
    assert isinstance(run, HeadlessRun) and run.notebook == folder / "sub" / "deep.ipynb"
    assert run.writes == folder / "sub" / "deep.nbconvert.ipynb"
    assert parse_command(["python", "-m", "pytest", "nb.ipynb"], folder) is None


def test_a_run_whose_notebook_is_unclear_says_how_to_name_it(folder: Path) -> None:
    many = parse_command([*NBCONVERT, "--execute", "--to", "notebook", "*.ipynb"], folder)
    assert isinstance(many, Unnamed)
    assert "2 notebooks (" in many.reason and "PLANBOOK_NOTEBOOK=" in many.reason
    missing = parse_command([*PAPERMILL, "gone.ipynb", "out.ipynb"], folder)
    assert isinstance(missing, Unnamed) and "PLANBOOK_NOTEBOOK=" in missing.reason
    remote = parse_command([*PAPERMILL, "s3://bucket/nb.ipynb", "out.ipynb"], folder)
    assert isinstance(remote, Unnamed) and "not a local file" in remote.reason


PAPERMILL_OPTIONS = [
    ["-p", "alpha", "0.5"],
    ["-r", "name", "raw value"],
    ["--parameters_yaml", "a: 1"],
    ["-k", "python3"],
    ["--cwd", "sub"],
    ["--log-output"],
    ["--no-progress-bar"],
    ["--inject-paths"],
    ["--execution-timeout=30"],
    ["--start-timeout", "60"],
    ["--report-mode"],
    ["--engine", "nbclient"],
]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    options=st.lists(st.sampled_from(PAPERMILL_OPTIONS), max_size=5),
    cuts=st.tuples(st.integers(0, 5), st.integers(0, 5)),
    target=st.sampled_from(["out.ipynb", "nb.ipynb", "out/run.ipynb"]),
)
def test_papermill_lines_read_as_papermill_reads_them(
    folder: Path, options: list[list[str]], cuts: tuple[int, int], target: str
) -> None:
    """Whole options before, between and after the two paths, as click accepts them."""
    first, second = sorted(cuts)
    args = [
        *(a for o in options[:first] for a in o),
        "nb.ipynb",
        *(a for o in options[first:second] for a in o),
        target,
        *(a for o in options[second:] for a in o),
    ]
    assert ours(PAPERMILL, args, folder) == by_papermill(args, folder)


NBCONVERT_OPTIONS = [
    ["--execute"],
    ["--to", "notebook"],
    ["--to=notebook"],
    ["--to", "html"],
    ["--inplace"],
    ["--stdout"],
    ["--allow-errors"],
    ["--output", "run"],
    ["--output=run.ipynb"],
    ["--output", "nb"],
    ["--output-dir", "out"],
    ["--output-dir=."],
    ["--NbConvertApp.use_output_suffix=False"],
    ["--ExecutePreprocessor.timeout=60"],
    ["--ExecutePreprocessor.kernel_name", "python3"],
    ["--log-level", "ERROR"],
    ["--writer", "FilesWriter"],
]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    options=st.lists(
        st.sampled_from(NBCONVERT_OPTIONS), max_size=5, unique_by=lambda o: o[0].split("=")[0]
    ),
    at=st.integers(0, 5),
    notebook=st.sampled_from(["nb.ipynb", "nb", "sub/deep.ipynb", "sub/dee*.ipynb"]),
)
def test_generated_nbconvert_lines_read_as_nbconvert_reads_them(
    folder: Path, options: list[list[str]], at: int, notebook: str
) -> None:
    """Options in any order and spelling, the notebook anywhere among them."""
    args = [
        *(a for o in options[:at] for a in o),
        notebook,
        *(a for o in options[at:] for a in o),
    ]
    try:
        expected = by_nbconvert(args, folder)
    except (Exception, SystemExit):
        assume(False)  # nbconvert itself refuses this line: it would not have run
        raise
    assert ours(NBCONVERT, args, folder) == expected, args
