"""Notebook files come back as Jupyter writes them, or in their own style; reading never writes;
drift is seen by content; no text in a cell can change anything but that cell."""

from __future__ import annotations

import base64
import difflib
import json
import os
import shutil
from pathlib import Path

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planbook.documents.file import FileNotebook
from planbook.documents.serializer import JUPYTER, Encoder
from planbook.engine.store import METADATA_KEY
from planbook.errors import MetadataError, PlanbookError
from planbook.model.cell import Cell
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace
from tests.conftest import make_notebook


def open_session(path: Path) -> Session:
    return Session(
        FileNotebook(path), Workspace(path.parent, protected=(path,)), notebook_path=path
    )


def jupyter_save(path: Path) -> str:
    """What Jupyter's own save writes for the content of ``path``."""
    return nbformat.writes(nbformat.read(path, as_version=4)) + "\n"


def changed_lines(before: str, after: str) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def without_planbook(text: str) -> str:
    nb = json.loads(text)
    nb["metadata"].pop(METADATA_KEY, None)
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False)


def old_notebook(path: Path, sources: list[str], *, corrupt: bool = False) -> bytes:
    """An nbformat 4.4 notebook (no cell ids), as older Jupyter wrote it."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    for cell in nb.cells:
        del cell["id"]
    nb.nbformat_minor = 4
    if corrupt:
        nb.metadata[METADATA_KEY] = {"schema_version": 2, "plans": {"p": {"state": 7}}}
    text = json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")
    return path.read_bytes()


def test_the_encoder_writes_what_nbformat_writes() -> None:
    nb = nbformat.v4.new_notebook(
        metadata={"kernelspec": {"name": "p", "display_name": "P"}, "z": [1.5, None]}
    )
    cell = nbformat.v4.new_code_cell("print('é')\nx = 1\n", execution_count=3)
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="é\nb"),
        nbformat.v4.new_output("display_data", data={"text/plain": "a\nb", "image/png": "AAA"}),
    ]
    nb.cells = [cell, nbformat.v4.new_markdown_cell(""), nbformat.v4.new_raw_cell("r")]
    from planbook.documents.nbnode import normalize

    tree = normalize(json.loads(json.dumps(nb)))
    assert Encoder(JUPYTER).encode(tree) == nbformat.writes(nb) + "\n"


def test_reading_never_writes_even_an_old_notebook(tmp_path: Path) -> None:
    path = tmp_path / "old.ipynb"
    before = old_notebook(path, ["a = 1", "b = 2"])
    session = open_session(path)
    session.render_text()
    session.current_plan()
    session.checkpoints()
    assert path.read_bytes() == before
    ids = [c.id for c in session.cells()]
    session.propose.edit_cell(ids[1], "b = 3", reason="r")  # the first change: ids upgrade
    saved = nbformat.read(path, as_version=4)
    assert [c.id for c in saved.cells] == ids and saved.nbformat_minor == 5


def test_corrupt_metadata_in_an_old_notebook_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "old.ipynb"
    before = old_notebook(path, ["a = 1"], corrupt=True)
    with pytest.raises(MetadataError, match="left untouched"):
        open_session(path)
    assert path.read_bytes() == before


def test_a_save_is_what_jupyter_saves_and_they_never_fight(tmp_path: Path) -> None:
    path = make_notebook(tmp_path / "n.ipynb", ["import math", "x = 1", "print(x)"])
    session = open_session(path)
    session.propose.edit_cell("c2", "x = 2\ny = 3", reason="r")
    session.propose.insert_cell("# notes\nmore", after="c1", reason="r", cell_type="markdown")
    assert session.approve().ok
    text = path.read_text(encoding="utf-8")
    assert text == jupyter_save(path)  # planbook metadata included, indented like the rest
    path.write_text(jupyter_save(path), encoding="utf-8")
    session.propose.delete_cell("c3", reason="r")
    assert session.approve().ok
    assert path.read_text(encoding="utf-8") == jupyter_save(path)


def test_another_consistent_style_is_kept_and_untouched_cells_stay_byte_identical(
    tmp_path: Path,
) -> None:
    nb = {
        "nbformat": 4,
        "nbformat_minor": 0,
        "metadata": {"colab": {"provenance": []}, "kernelspec": {"name": "python3"}},
        "cells": [
            {"cell_type": "markdown", "source": ["# Titel ü\n", "text"], "metadata": {}},
            {
                "cell_type": "code",
                "source": ["x = 1"],
                "metadata": {"id": "abc"},
                "execution_count": None,
                "outputs": [],
            },
            {
                "cell_type": "code",
                "source": ["y = 2"],
                "metadata": {},
                "execution_count": 1,
                "outputs": [{"output_type": "stream", "name": "stdout", "text": ["2\n"]}],
            },
        ],
    }
    path = tmp_path / "colab.ipynb"
    original = json.dumps(nb, indent=2, ensure_ascii=False)  # unsorted keys, no final newline
    path.write_text(original, encoding="utf-8")
    session = open_session(path)
    session.propose.edit_cell(session.cells()[1].id, "x = 10", reason="r")
    assert session.approve().ok
    text = path.read_text(encoding="utf-8")
    assert text.startswith('{\n  "nbformat": 4') and not text.endswith("\n")
    assert changed_lines(without_planbook(original), without_planbook(text)) != []
    # The file's own key order: header, metadata (with planbook's), then the cells.
    head, old_head = text[: text.index('"metadata"')], original[: original.index('"metadata"')]
    top = '\n  "cells": ['
    body, old_body = text[text.index(top) :], original[original.index(top) :]
    assert changed_lines(old_head, head) == ['-  "nbformat_minor": 0,', '+  "nbformat_minor": 5,']
    # Only the edited source line and the 4.5 upgrade (ids, minor version) differ.
    upgrade = ('"id":', '"nbformat_minor":')
    assert [ln for ln in changed_lines(old_body, body) if not any(u in ln for u in upgrade)] == [
        '-        "x = 1"',
        '+        "x = 10"',
    ]
    session.rollback("1")
    rolled = json.loads(path.read_text(encoding="utf-8"))
    rolled["metadata"].pop(METADATA_KEY)
    upgraded = json.loads(original)
    upgraded["cells"] = [
        {"id": saved["id"], **cell}
        for cell, saved in zip(upgraded["cells"], rolled["cells"], strict=True)
    ]
    upgraded["nbformat_minor"] = 5
    assert json.dumps(rolled, indent=2, ensure_ascii=False) == json.dumps(
        upgraded, indent=2, ensure_ascii=False
    )


def test_unknown_keys_and_legacy_signature_are_kept_and_unknown_cell_types_refused(
    tmp_path: Path,
) -> None:
    path = make_notebook(tmp_path / "n.ipynb", ["a", "b"])
    nb = json.loads(path.read_text())
    nb["metadata"]["signature"] = "sha256:abc"
    nb["cells"][1]["x_custom"] = {"keep": True}
    path.write_text(json.dumps(nb, indent=1, sort_keys=True) + "\n")
    session = open_session(path)
    session.propose.edit_cell("c2", "B", reason="r")
    assert session.approve().ok
    saved = json.loads(path.read_text())
    assert saved["metadata"]["signature"] == "sha256:abc"
    assert saved["cells"][1]["x_custom"] == {"keep": True}
    nb["cells"][0]["cell_type"] = "future"
    path.write_text(json.dumps(nb, indent=1, sort_keys=True) + "\n")
    before = path.read_bytes()
    with pytest.raises(MetadataError) as info:
        FileNotebook(path)
    assert "cell 1 has cell type 'future'" in str(info.value)
    assert "\n" not in str(info.value) and path.read_bytes() == before


def test_drift_is_seen_by_content_even_with_the_same_size_and_mtime(tmp_path: Path) -> None:
    path = make_notebook(tmp_path / "n.ipynb", ["x = 1", "y = 2"])
    session = open_session(path)
    session.propose.edit_cell("c2", "y = 3", reason="r")
    stat = path.stat()
    outside = tmp_path / "outside.ipynb"
    outside.write_bytes(path.read_bytes().replace(b'"x = 1"', b'"x = 9"'))
    os.utime(outside, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    shutil.copy2(outside, path)  # cp -p: same size, same mtime, other content
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (stat.st_size, stat.st_mtime_ns)
    assert session.cells()[0].source == "x = 9"


def test_a_failed_commit_keeps_the_file_and_the_document(tmp_path: Path) -> None:
    path = make_notebook(tmp_path / "n.ipynb", ["x = 1"])
    doc = FileNotebook(path)
    before = path.read_bytes()
    with pytest.raises(PlanbookError, match="lone surrogate") as info:
        doc.replace_cell(Cell(id="c1", source="bad \ud800"))
    assert "\n" not in str(info.value)
    assert path.read_bytes() == before and doc.cells()[0].source == "x = 1"


# Text a cell may hold: anything, including NUL, JSON and the serializer's own spelling.
CELL_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)) | st.sampled_from(['"', "\\", "\n"]),
    max_size=40,
) | st.sampled_from(
    [
        "\x00planbook-metadata\x00",
        '"\\u0000planbook-metadata\\u0000"',
        '{"planbook": 1}',
        "},\n {",
        "\u2028\u2029",
    ]
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=CELL_TEXT, surrogate=st.booleans())
def test_no_cell_text_changes_anything_but_its_cell(
    tmp_path: Path, text: str, surrogate: bool
) -> None:
    folder = tmp_path / base64.b32encode(os.urandom(5)).decode()
    folder.mkdir()
    path = make_notebook(folder / "n.ipynb", ["a = 1", "b = 2", "c = 3"])
    session = open_session(path)
    if surrogate:
        text += "\udc80"
    before = path.read_bytes()
    try:
        session.propose.edit_cell("c2", text, reason="r")
    except PlanbookError as exc:
        assert surrogate and "lone surrogate" in str(exc) and "\n" not in str(exc)
        assert path.read_bytes() == before
        return
    assert not surrogate
    assert session.approve().ok
    saved = nbformat.read(path, as_version=4)
    nbformat.validate(saved)
    assert [c.source for c in saved.cells] == ["a = 1", text, "c = 3"]
    assert path.read_text(encoding="utf-8") == jupyter_save(path)
    assert isinstance(saved.metadata[METADATA_KEY], dict)
    assert open_session(path).current_plan() is not None


def test_a_windows_checkout_keeps_its_crlf_line_endings(tmp_path: Path) -> None:
    path = make_notebook(tmp_path / "n.ipynb", ["x = 1", "y = 2"])
    original = path.read_bytes().replace(b"\n", b"\r\n")
    path.write_bytes(original)
    session = open_session(path)
    session.propose.edit_cell("c2", "y = 3", reason="r")
    assert session.approve().ok
    saved = path.read_bytes()
    assert b"\n" not in saved.replace(b"\r\n", b"")
    assert saved.replace(b"\r\n", b"\n").decode() == jupyter_save(path).replace("\r\n", "\n")
    head = original[: original.index(b'"metadata"')]
    assert saved.startswith(head.replace(b"y = 2", b"y = 3"))


def test_a_notebook_of_images_is_held_once_through_its_first_save(tmp_path: Path) -> None:
    """Opening, staging (the first save) and approving one step on a notebook of images peaks
    about where nbformat.read of it does: each image's text is the tree's own string between
    quotes, and its bytes a view of the file as read (before: the text of each image was kept
    by every container above it, then encoded again; 2.3 times nbformat.read)."""
    import tracemalloc

    nb = nbformat.v4.new_notebook()
    for i in range(150):
        cell = nbformat.v4.new_code_cell(f"plot({i})")
        cell["id"] = f"c{i}"
        png = base64.b64encode(os.urandom(15_000)).decode()
        cell.outputs = [nbformat.v4.new_output("display_data", data={"image/png": png})]
        nb.cells.append(cell)
    path = tmp_path / "images.ipynb"
    nbformat.write(nb, path)
    before = path.read_bytes()

    def peak(work: object) -> int:
        tracemalloc.start()
        try:
            assert callable(work)
            work()
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    def ours() -> None:
        session = Session(FileNotebook(path), Workspace(tmp_path, protected=(path,)))
        session.propose.edit_cell("c3", "plot(-3)", reason="r")
        assert session.approve().ok

    peak(lambda: nbformat.read(path, as_version=4))  # nbformat's first-use costs, not counted
    floor = peak(lambda: nbformat.read(path, as_version=4))
    used = peak(ours)
    assert used < 1.5 * floor, (used, floor)
    # and the file is what Jupyter writes, but for the edited cell and planbook's record
    after = nbformat.read(path, as_version=4)
    assert after.cells[3].source == "plot(-3)"
    assert nbformat.writes(after).encode().count(b"image/png") == before.count(b"image/png")


def test_long_strings_are_written_as_json_writes_them_in_every_style() -> None:
    """A long string is a piece of its own (its text, or the tree's string between quotes
    where nothing needs escaping), and so is every container that holds one: the text must
    still be json.dumps's, escaped or not, ASCII or not, in a list that grows between saves."""
    import random

    from planbook.documents.serializer import Style

    rng = random.Random(7)

    def text() -> str:
        size = rng.choice([5, 1023, 1024, 1025, 3000, 17000])
        return "".join(rng.choice(rng.choice(["abcXYZ019+/=", 'ab"\\\n\té€'])) for _ in range(size))

    def tree(depth: int) -> object:
        if depth > 4 or rng.random() < 0.3:
            return text() if rng.random() < 0.7 else rng.choice([1, 2.5, None, True])
        if rng.random() < 0.5:
            return {f"k{i}": tree(depth + 1) for i in range(rng.randint(0, 4))}
        return [tree(depth + 1) for _ in range(rng.choice([0, 1, 3, 40] if depth < 2 else [0, 3]))]

    for _ in range(15):
        nb = {"cells": [tree(1) for _ in range(rng.randint(1, 12))], "metadata": {"x": tree(2)}}
        grown = {**nb, "cells": [*nb["cells"], tree(1)]}
        for style in (JUPYTER, Style(indent="  "), Style(ensure_ascii=True)):
            encoder = Encoder(style)
            for value in (nb, grown):
                want = json.dumps(
                    value, indent=len(style.indent), sort_keys=True, ensure_ascii=style.ensure_ascii
                )
                assert "".join(encoder.pieces(value)) == want + "\n"
