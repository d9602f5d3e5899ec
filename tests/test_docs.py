"""Every code block in README.md and docs/*.md runs, exactly as printed, in order.

Each page gets a fresh temp folder holding ``analysis.ipynb`` (cells ``title``, ``load``,
``plot``) and a copy of the repository's ``notebooks/``. Then:

- ```python blocks become the cells of a notebook, run one by one in a real kernel started in
  that folder, as JupyterLab runs them: the kernel belongs to that notebook
  (``JPY_SESSION_NAME``) and each execute request carries its cell's id (``cellId``). A page
  that says its examples use ``analysis.ipynb`` (before its first block) adds its blocks below
  that notebook's three cells; any other page (the README) starts from an empty notebook.
- ```console blocks: every ``$ ...`` line runs in bash in that folder (the installed
  ``planbook`` first on PATH) and must exit 0, or N when the line ends with ``# exit N``.
  ```bash blocks: every line runs the same way. A plain ``planbook ARGS`` line (no pipe,
  redirection or other shell syntax) other than the page's first runs the command's own entry
  function, ``planbook.surfaces.cli.main.main(ARGS)``, in this process, in that folder with the same
  environment: the same code and exit code without a new interpreter per line. The page's first
  ``planbook`` line, and every line with shell syntax, runs the installed console script.
- ```toml blocks are written as a ``pyproject.toml`` and must load as permission rules.
- Anything else, and any block that must not run (it installs packages, reaches a paid model or
  a live server), says so visibly in the page: the line before it starts with
  "Not run by the tests:" and gives the reason.
"""

from __future__ import annotations

import io
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.kernel_helper import execute_content

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.M | re.S)
NOT_RUN = re.compile(r"^[*_]?Not run by the tests: (.+?)[*_]?$")
RUNNABLE = ("python", "console", "bash", "toml")

#: Known failures that another area fixes, by page and the block's first line. Each entry
#: names who fixes it; xfail is strict, so the fix shows up as a failure to remove the entry.
KNOWN_FAILURES: dict[str, str] = {}


@dataclass
class Sample:
    page: str
    line: int
    lang: str
    code: str
    not_run: str | None


def samples(page: Path) -> list[Sample]:
    text = page.read_text(encoding="utf-8")
    out = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        marker = NOT_RUN.match(before)
        out.append(
            Sample(
                page.name,
                text.count("\n", 0, match.start()) + 1,
                match.group(1),
                match.group(2),
                marker.group(1) if marker else None,
            )
        )
    return out


def make_analysis(folder: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    cells = [
        nbformat.v4.new_markdown_cell("# Penguins"),
        nbformat.v4.new_code_cell(
            "from palmerpenguins import load_penguins\n\npenguins = load_penguins()"
        ),
        nbformat.v4.new_code_cell('penguins.groupby("species").size()'),
    ]
    for cell, cell_id in zip(cells, ("title", "load", "plot"), strict=True):
        cell["id"] = cell_id
    nb.cells = cells
    path = folder / "analysis.ipynb"
    nbformat.write(nb, path)
    return path


def page_folder(folder: Path) -> Path:
    make_analysis(folder)
    shutil.copytree(ROOT / "notebooks", folder / "notebooks")
    (folder / "tmp").mkdir()  # TMPDIR of everything the page runs: nothing lands in /tmp
    return folder


def uses_analysis(page: Path) -> bool:
    """Does the page say, before its first Python block, that its examples use analysis.ipynb?"""
    text = page.read_text(encoding="utf-8")
    first = text.find("```python")
    return bool(re.search(r"\buses? `analysis\.ipynb`", text[: first if first >= 0 else None]))


#: What a sample must never see: it would reach a paid model.
HIDDEN_ENV = ("PLANBOOK_MODEL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")


def sample_env(folder: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in HIDDEN_ENV}
    env["TMPDIR"] = str(folder / "tmp")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


#: Anything bash would read as more than words: such a line runs in bash.
SHELL_SYNTAX = re.compile(r"""[|&;<>()$`\\*?~{}\[\]'"#=]""")


def planbook_argv(command: str) -> list[str] | None:
    """The arguments of a plain ``planbook ARGS`` line; None for anything else."""
    words = command.split()
    if SHELL_SYNTAX.search(command) or not words or words[0] != "planbook":
        return None
    return words[1:]


def run_cli_in_process(
    argv: list[str], folder: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str, str]:
    """``planbook.surfaces.cli.main.main(argv)`` as the console script would run it from ``folder``
    with
    ``sample_env(folder)``: its exit code, stdout and stderr."""
    from planbook.surfaces.cli import main as cli

    # a TextIOWrapper, not a StringIO: the command writes some output to sys.stdout.buffer
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="")
    err = io.StringIO()
    with monkeypatch.context() as patch:
        patch.chdir(folder)
        for name, value in sample_env(folder).items():
            if os.environ.get(name) != value:
                patch.setenv(name, value)
        for name in HIDDEN_ENV:
            patch.delenv(name, raising=False)
        patch.setattr(tempfile, "tempdir", None)  # gettempdir() caches: follow the new TMPDIR
        patch.setattr(sys, "stdout", out)
        patch.setattr(sys, "stderr", err)
        try:
            code = cli.main(argv)
        except SystemExit as stop:  # argparse's --version and --help end so
            # what the interpreter does with it at the console script's exit
            code = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
        out.flush()
    buffer = out.buffer
    assert isinstance(buffer, io.BytesIO)
    return code, buffer.getvalue().decode("utf-8"), err.getvalue()


class Kernel:
    """A kernel that belongs to ``notebook``, sent cells the way JupyterLab sends them."""

    def __init__(self, folder: Path, notebook: Path) -> None:
        from jupyter_client.manager import start_new_kernel

        env = sample_env(folder)
        env["JPY_SESSION_NAME"] = str(notebook)
        self.km, self.kc = start_new_kernel(
            kernel_name="python3", cwd=str(folder), env=env, stderr=subprocess.DEVNULL
        )

    def run(self, code: str, cell_id: str) -> tuple[dict[str, Any], str]:
        texts: list[str] = []
        # JupyterLab 4 puts the cell's id in the request's metadata (FIELD-NOTES).
        msg = self.kc.session.msg(
            "execute_request", execute_content(code), metadata={"cellId": cell_id}
        )
        self.kc.shell_channel.send(msg)
        msg_id = msg["header"]["msg_id"]
        try:
            while True:
                out = self.kc.get_iopub_msg(timeout=300)
                if out["parent_header"].get("msg_id") != msg_id:
                    continue
                content, kind = out["content"], out["msg_type"]
                if kind == "stream":
                    texts.append(content["text"])
                elif kind in ("execute_result", "display_data"):
                    texts.append(str(content["data"].get("text/plain", "")))
                elif kind == "error":
                    texts.append("\n".join(content["traceback"]))
                elif kind == "status" and content["execution_state"] == "idle":
                    break
            while True:
                reply = self.kc.get_shell_msg(timeout=60)
                if reply["parent_header"].get("msg_id") == msg_id:
                    return reply["content"], "".join(texts)
        except queue.Empty:
            return {"status": "error", "ename": "Timeout", "evalue": "300 s"}, "".join(texts)

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def notebook_of(page: Path, folder: Path, python: list[Sample]) -> tuple[Path, list[str]]:
    """The notebook the page's Python blocks are the cells of, and those cells' ids."""
    path = folder / "analysis.ipynb" if uses_analysis(page) else folder / "notebook.ipynb"
    nb = nbformat.read(path, as_version=4) if path.exists() else nbformat.v4.new_notebook()
    ids = []
    for sample in python:
        cell = nbformat.v4.new_code_cell(sample.code)
        cell["id"] = uuid.uuid4().hex[:8]  # as random as JupyterLab's
        ids.append(cell["id"])
        nb.cells.append(cell)
    nbformat.write(nb, path)
    return path, ids


def shell_lines(sample: Sample) -> list[tuple[str, int]]:
    """The commands of a console or bash block, each with the exit code it must give."""
    if sample.lang == "console":
        lines = [line[2:] for line in sample.code.splitlines() if line.startswith("$ ")]
    else:
        lines = [line for line in sample.code.splitlines() if line.strip()]
    out = []
    for line in lines:
        command, _, expect = line.partition("# exit ")
        out.append((command.strip(), int(expect) if expect.strip() else 0))
    return out


def test_there_are_pages_and_samples() -> None:
    names = {p.name for p in PAGES}
    for page in (
        "modes.md",
        "magics-and-api.md",
        "permissions.md",
        "checkpoints.md",
        "cli.md",
        "what-it-cannot-do.md",
    ):
        assert page in names
    assert sum(len(samples(p)) for p in PAGES) >= 20


def test_every_block_runs_or_says_visibly_why_not() -> None:
    silent = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        assert "<!-- skip" not in text, f"{page.name}: an invisible skip marker"
        for sample in samples(page):
            if sample.not_run is not None:
                assert len(sample.not_run.split()) >= 3, (page.name, sample.line, "say why")
            elif sample.lang not in RUNNABLE:
                silent.append(f"{page.name}:{sample.line} ({sample.lang or 'no language'})")
    assert not silent, f"blocks that neither run nor say why: {silent}"


def _runnable_pages() -> list[Any]:
    params = []
    for page in PAGES:
        if not any(
            s.lang in ("python", "console", "bash") and not s.not_run for s in samples(page)
        ):
            continue
        marks = []
        if page.name in KNOWN_FAILURES:
            marks.append(pytest.mark.xfail(reason=KNOWN_FAILURES[page.name], strict=True))
        params.append(pytest.param(page, marks=marks, id=page.name))
    return params


@pytest.mark.kernel
@pytest.mark.parametrize("page", _runnable_pages())
def test_page_samples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = page_folder(tmp_path)
    runnable = [s for s in samples(page) if s.not_run is None]
    python = [s for s in runnable if s.lang == "python"]
    if python:
        notebook, ids = notebook_of(page, folder, python)
        kernel = Kernel(folder, notebook)
        try:
            for sample, cell_id in zip(python, ids, strict=True):
                reply, text = kernel.run(sample.code, cell_id)
                assert reply["status"] == "ok", (
                    f"{page.name}:{sample.line}: {reply.get('ename')}: {reply.get('evalue')}\n"
                    f"{sample.code}\n--- output ---\n{text}"
                )
                assert "UsageError" not in text, f"{page.name}:{sample.line}\n{text}"
        finally:
            kernel.close()
    console_script_ran = False
    for sample in runnable:
        if sample.lang not in ("console", "bash"):
            continue
        for command, expected in shell_lines(sample):
            argv = planbook_argv(command)
            if argv is not None and console_script_ran:
                code, out, err = run_cli_in_process(argv, folder, monkeypatch)
            else:
                result = subprocess.run(
                    ["bash", "-c", command],
                    cwd=folder,
                    env=sample_env(folder),
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
                code, out, err = result.returncode, result.stdout, result.stderr
                console_script_ran |= command.split()[:1] == ["planbook"]
            assert code == expected, (
                f"{page.name}:{sample.line}: `{command}` exited {code}\n{out}\n{err}"
            )


@pytest.mark.parametrize(
    "page", [p for p in PAGES if any(s.lang == "toml" for s in samples(p))], ids=lambda p: p.name
)
def test_toml_samples_are_rules_planbook_accepts(page: Path, tmp_path: Path) -> None:
    from planbook.engine.rules.matching import RuleSet

    for sample in samples(page):
        if sample.lang != "toml" or sample.not_run:
            continue
        (tmp_path / "pyproject.toml").write_text(sample.code)
        rules = RuleSet.load(tmp_path)  # raises RulesError, naming the rule, if one is wrong
        assert rules.rules, f"{page.name}:{sample.line}: no rule was read"
