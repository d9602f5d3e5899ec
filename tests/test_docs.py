"""Every code sample in README.md and docs/*.md runs, as written.

- ```python blocks of a page run in order in one real kernel (magics included), started in a
  temp folder that holds ``analysis.ipynb`` (cells ``title``, ``load``, ``plot``) with
  ``JPY_SESSION_NAME`` pointing at it, as JupyterLab would start it.
- ```console blocks: every ``$ planbook ...`` line runs (in the same folder, after the page's
  Python blocks); it must exit 0 unless the line ends with ``# exit N``.
- ```toml blocks are written as a ``pyproject.toml`` and must load as permission rules.
- A block preceded by ``<!-- skip: reason -->`` is not run; the reason must say why (only
  samples that would reach a paid model or a live server are skipped).
"""

from __future__ import annotations

import os
import queue
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.M | re.S)
SKIP = re.compile(r"<!--\s*skip:\s*(.+?)\s*-->\s*$")


@dataclass
class Sample:
    page: str
    line: int
    lang: str
    code: str
    skip: str | None


def samples(page: Path) -> list[Sample]:
    text = page.read_text(encoding="utf-8")
    out = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = SKIP.search(before)
        out.append(
            Sample(
                page.name,
                text.count("\n", 0, match.start()) + 1,
                match.group(1),
                match.group(2),
                skip.group(1) if skip else None,
            )
        )
    return out


def make_analysis(folder: Path) -> Path:
    nb = nbformat.v4.new_notebook()
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


class Kernel:
    def __init__(self, folder: Path, notebook: Path) -> None:
        from jupyter_client.manager import start_new_kernel

        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("PLANBOOK_MODEL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")
        }
        env["JPY_SESSION_NAME"] = str(notebook)
        self.km, self.kc = start_new_kernel(
            kernel_name="python3", cwd=str(folder), env=env, stderr=subprocess.DEVNULL
        )

    def run(self, code: str) -> tuple[dict[str, Any], str]:
        texts: list[str] = []

        def hook(msg: dict[str, Any]) -> None:
            content = msg["content"]
            if msg["msg_type"] == "stream":
                texts.append(content["text"])
            elif msg["msg_type"] in ("execute_result", "display_data"):
                texts.append(str(content["data"].get("text/plain", "")))
            elif msg["msg_type"] == "error":
                texts.append("\n".join(content["traceback"]))

        try:
            reply = self.kc.execute_interactive(code, timeout=300, output_hook=hook)
        except (TimeoutError, queue.Empty):
            return {"status": "error", "ename": "Timeout", "evalue": "300 s"}, "".join(texts)
        return reply["content"], "".join(texts)

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


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


def test_every_skip_says_why() -> None:
    for page in PAGES:
        for sample in samples(page):
            if sample.skip is not None:
                assert len(sample.skip.split()) >= 3, (page.name, sample.line)


@pytest.mark.kernel
@pytest.mark.parametrize(
    "page",
    [
        p
        for p in PAGES
        if any(s.lang in ("python", "console") and s.skip is None for s in samples(p))
    ],
    ids=lambda p: p.name,
)
def test_page_samples_run(page: Path, tmp_path: Path) -> None:
    notebook = make_analysis(tmp_path)
    runnable = [s for s in samples(page) if s.skip is None]
    python = [s for s in runnable if s.lang == "python"]
    if python:
        kernel = Kernel(tmp_path, notebook)
        try:
            for sample in python:
                reply, text = kernel.run(sample.code)
                assert reply["status"] == "ok", (
                    f"{page.name}:{sample.line}: {reply.get('ename')}: {reply.get('evalue')}\n"
                    f"{sample.code}\n--- output ---\n{text}"
                )
                assert "UsageError" not in text, f"{page.name}:{sample.line}\n{text}"
        finally:
            kernel.close()
    for sample in runnable:
        if sample.lang != "console":
            continue
        for line in sample.code.splitlines():
            if not line.startswith("$ planbook"):
                continue
            command, _, expect = line[2:].partition("# exit ")
            args = shlex.split(command)[1:]
            result = subprocess.run(
                [sys.executable, "-m", "planbook.cli", *args],
                cwd=tmp_path,
                env={**os.environ, "TMPDIR": str(tmp_path)},  # `planbook demo` makes a folder
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert result.returncode == int(expect or 0), (
                f"{page.name}:{sample.line}: `{command.strip()}` exited {result.returncode}\n"
                f"{result.stdout}\n{result.stderr}"
            )


@pytest.mark.parametrize(
    "page", [p for p in PAGES if any(s.lang == "toml" for s in samples(p))], ids=lambda p: p.name
)
def test_toml_samples_are_rules_planbook_accepts(page: Path, tmp_path: Path) -> None:
    from planbook.engine.rules import RuleSet

    for sample in samples(page):
        if sample.lang != "toml":
            continue
        (tmp_path / "pyproject.toml").write_text(sample.code)
        rules = RuleSet.load(tmp_path)  # raises RulesError, naming the rule, if one is wrong
        assert rules.rules, f"{page.name}:{sample.line}: no rule was read"
