"""The page's code never turns data into HTML: the panel's ES modules (js/*.js) and the
JupyterLab extension (js/labextension/src/*.ts) build the DOM with textContent and elements.

A static check over the sources, so a new ``innerHTML`` or a link built from a step is caught
before a browser ever loads it (the browser test, tests/browser/test_markup_payloads.py, shows
that what exists today stays inert)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted(
    [*(ROOT / "js").glob("*.js"), *(ROOT / "js" / "labextension" / "src").glob("*.ts")]
)

#: Ways a string becomes markup, script, a URL or a style in the page.
HTML_SINKS = {
    "innerHTML": re.compile(r"\.innerHTML\b"),
    "outerHTML": re.compile(r"\.outerHTML\b"),
    "insertAdjacentHTML": re.compile(r"\binsertAdjacentHTML\b"),
    "document.write": re.compile(r"\bdocument\.write(ln)?\s*\("),
    "DOMParser / createContextualFragment": re.compile(
        r"\bDOMParser\b|\bcreateContextualFragment\b"
    ),
    "eval / Function": re.compile(r"\beval\s*\(|\bnew\s+Function\s*\("),
    "href / src / srcdoc / action": re.compile(r"\.(href|src|srcdoc|action|formAction)\s*="),
    "url or event attribute": re.compile(
        r"setAttribute(NS)?\(\s*(null\s*,\s*)?['\"](href|src|srcdoc|action|style|on\w+|xlink:href)['\"]"
    ),
    "style text": re.compile(r"\.style\.cssText\s*=|\.setProperty\s*\("),
    # None today; one added must go through JupyterLab's sanitizer (and this list).
    "markdown rendering": re.compile(
        r"\brenderMarkdown\b|from\s+['\"]marked['\"]|(?<![.\w])marked\.parse\b"
    ),
}


def test_the_sources_are_found() -> None:
    names = {p.name for p in SOURCES}
    assert {"panel.js", "step-row.js", "cellreview.ts", "diffview.ts"} <= names


@pytest.mark.parametrize("source", SOURCES, ids=[p.name for p in SOURCES])
def test_no_source_turns_data_into_html_urls_or_styles(source: Path) -> None:
    text = source.read_text(encoding="utf-8")
    found = [
        f"{source.name}:{text.count(chr(10), 0, m.start()) + 1}: {name}"
        for name, pattern in HTML_SINKS.items()
        for m in pattern.finditer(text)
    ]
    assert found == []
