"""The corpus (tests/corpus): open, stage, approve and roll back each notebook; nothing but the
intended change differs, in the notebook's own style; the result is valid and nbconvert reads it.

The expected text is built with the standard library's json in the file's style, independent
of planbook's serializer; planbook's own metadata block is cut out of the file as text.
"""

from __future__ import annotations

import difflib
import json
import shutil
from pathlib import Path
from typing import Any

import nbformat
import pytest

from planbook.documents.file import FileNotebook
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace

CORPUS = Path(__file__).resolve().parent / "corpus"
FILES = sorted(CORPUS.glob("*.ipynb"))
#: Written by Jupyter's writer without transient keys: a Jupyter save changes nothing.
JUPYTER_STYLE = {
    "v44_widgets.ipynb",
    "attachments_raw.ipynb",
    "large_png_outputs.ipynb",
    "unicode_text.ipynb",
    "custom_metadata_v45.ipynb",
}


def style_of(text: str) -> dict[str, Any]:
    indent = text[2 : text.index('"', 2)]
    return {
        "indent": indent,
        "sort_keys": indent == " ",  # the unsorted corpus file is the 2-space Colab one
        # escaped only if the file is ASCII although its content is not (no evidence: UTF-8)
        "ensure_ascii": text.isascii()
        and not json.dumps(json.loads(text), ensure_ascii=False).isascii(),
        "newline": text.endswith("\n"),
    }


def dumps(nb: dict[str, Any], style: dict[str, Any]) -> str:
    text = json.dumps(
        nb, indent=style["indent"], sort_keys=style["sort_keys"], ensure_ascii=style["ensure_ascii"]
    )
    return text + "\n" if style["newline"] else text


def cut_planbook(text: str, indent: str) -> str:
    """The file's text without metadata.planbook (cut as text, not re-encoded)."""
    lines = text.split("\n")
    start = lines.index(f'{indent * 2}"planbook": {{')
    end = next(
        i for i in range(start + 1, len(lines)) if lines[i] in (indent * 2 + "}", indent * 2 + "},")
    )
    last = lines[end] == indent * 2 + "}"
    del lines[start : end + 1]
    if last:
        lines[start - 1] = lines[start - 1].removesuffix(",")
    return "\n".join(lines)


def upgraded(original: dict[str, Any], saved: dict[str, Any]) -> dict[str, Any]:
    """The original with the 4.5 upgrade planbook makes on its first save (ids from ``saved``)."""
    nb = json.loads(json.dumps(original))
    if nb["nbformat_minor"] < 5:
        nb["nbformat_minor"] = 5
    # the steps edit one cell and add one at the end: the others are in their original order
    ids = [c["id"] for c in saved["cells"]]
    nb["cells"] = [
        c if "id" in c else {"id": i, **c} for c, i in zip(nb["cells"], ids, strict=False)
    ]
    return nb


def unrelated(expected: str, actual: str) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(expected.split("\n"), actual.split("\n"), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


@pytest.mark.parametrize("source", FILES, ids=lambda p: p.name)
def test_corpus_notebook_round_trip(source: Path, tmp_path: Path) -> None:
    path = tmp_path / source.name
    shutil.copyfile(source, path)
    original_text = source.read_text(encoding="utf-8")
    original = json.loads(original_text)
    style = style_of(original_text)

    session = Session(
        FileNotebook(path), Workspace(tmp_path, protected=(path,)), notebook_path=path
    )
    session.render_text()
    assert path.read_bytes() == source.read_bytes(), "opening wrote the file"

    cells = session.cells()
    target = next(c for c in cells if c.cell_type == "code")
    new_source = target.source + "\nchecked = True  # é"
    session.propose.edit_cell(target.id, new_source, reason="corpus")
    session.propose.insert_cell("## Added by planbook", after=cells[-1].id, cell_type="markdown")
    assert session.approve().ok
    text = path.read_text(encoding="utf-8")
    saved = json.loads(text)

    expected = upgraded(original, saved)
    index = [c["id"] for c in expected["cells"]].index(target.id)
    expected["cells"][index] = {**expected["cells"][index], "source": new_source.splitlines(True)}
    added = saved["cells"][-1]
    expected["cells"].append(
        {
            "cell_type": "markdown",
            "id": added["id"],
            "metadata": {},
            "source": ["## Added by planbook"],
        }
    )
    assert unrelated(dumps(expected, style), cut_planbook(text, style["indent"])) == []

    node = nbformat.reads(text, as_version=4)
    nbformat.validate(node)
    from nbconvert import PythonExporter

    body, _ = PythonExporter().from_notebook_node(node)
    assert "checked = True" in body
    if source.name in JUPYTER_STYLE:
        assert nbformat.writes(node) + "\n" == text  # a Jupyter save after planbook's: no change

    session.rollback(session.checkpoints()[0].id)
    rolled = path.read_text(encoding="utf-8")
    assert cut_planbook(rolled, style["indent"]) == dumps(upgraded(original, saved), style)


SVG = '<svg xmlns="http://www.w3.org/2000/svg">\n <rect width="1" height="1"/>\n</svg>\n'


def _svg_notebook(path: Path) -> str:
    """A notebook in Jupyter's style except that one SVG attachment is stored as one string
    (as some tools write it); another is split into lines, as nbformat writes it."""
    markdown = {
        "attachments": {
            "one.svg": {"image/svg+xml": SVG},
            "lines.svg": {"image/svg+xml": SVG.splitlines(True)},
        },
        "cell_type": "markdown",
        "id": "m1",
        "metadata": {},
        "source": ["![one](attachment:one.svg) ![lines](attachment:lines.svg)"],
    }
    code = {
        "cell_type": "code",
        "execution_count": None,
        "id": "c1",
        "metadata": {},
        "outputs": [],
        "source": ["x = 1"],
    }
    metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}}
    nb = {"cells": [markdown, code], "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}
    text = json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")
    return text


@pytest.mark.parametrize("edited", ["c1", "m1"], ids=["unrelated step", "the cell's own text"])
def test_an_svg_attachment_keeps_its_stored_form(edited: str, tmp_path: Path) -> None:
    path = tmp_path / "svg.ipynb"
    original = _svg_notebook(path)
    session = Session(
        FileNotebook(path), Workspace(tmp_path, protected=(path,)), notebook_path=path
    )
    old_source = {"c1": "x = 1", "m1": "![one](attachment:one.svg) ![lines](attachment:lines.svg)"}
    session.propose.edit_cell(edited, "changed = True", reason="corpus")
    assert session.approve().ok
    text = path.read_text(encoding="utf-8")
    diff = unrelated(original, cut_planbook(text, " "))
    assert diff == [f'-    "{old_source[edited]}"', '+    "changed = True"']
    saved = json.loads(text)["cells"][0]["attachments"]
    assert saved["one.svg"]["image/svg+xml"] == SVG
    assert saved["lines.svg"]["image/svg+xml"] == SVG.splitlines(True)
