"""A notebook the person trusted (Jupyter's notary signed it) is still trusted after planbook
saved a change into the file; one they never trusted is not made trusted."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nbformat.sign import NotebookNotary

from planbook.documents import trust
from planbook.documents.file import FileNotebook
from planbook.documents.notary import CACHE_SIZE, Notary
from planbook.documents.trust import TreeSigner
from planbook.model.cell import Cell
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace
from tests.conftest import make_notebook


@pytest.fixture(scope="module")
def notary_for_property(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NotebookNotary]:
    """A notary of its own (hypothesis runs many examples in one test: one notary for them)."""
    data = tmp_path_factory.mktemp("jupyter-data")
    with NotebookNotary(data_dir=str(data)) as made:
        yield made


@pytest.fixture
def notary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[NotebookNotary]:
    """This person's notary, in a data dir of the test's own."""
    data = tmp_path / "jupyter-data"
    data.mkdir()
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(data))
    with NotebookNotary() as made:
        assert Path(made.secret_file).parent == data  # never the real user's
        yield made


def trusted(notary: NotebookNotary, path: Path) -> bool:
    return bool(notary.check_signature(nbformat.read(path, as_version=4)))


def add_output(path: Path) -> None:
    doc = FileNotebook(path)
    with doc.transaction():
        cell = doc.cells()[1]
        out = {"output_type": "stream", "name": "stdout", "text": "42\n"}
        doc.replace_cell(Cell(**{**cell.model_dump(), "outputs": [out], "execution_count": 3}))


def test_a_trusted_notebook_stays_trusted_after_planbook_saves(
    tmp_path: Path, notary: NotebookNotary
) -> None:
    path = make_notebook(tmp_path / "mine.ipynb", ["x = 41", "print(x + 1)"])
    notary.sign(nbformat.read(path, as_version=4))
    assert trusted(notary, path)
    add_output(path)
    assert "42" in path.read_text()
    assert trusted(notary, path)


def test_an_untrusted_notebook_stays_untrusted(tmp_path: Path, notary: NotebookNotary) -> None:
    path = make_notebook(tmp_path / "theirs.ipynb", ["x = 41", "print(x + 1)"])
    add_output(path)
    assert "42" in path.read_text()
    assert not trusted(notary, path)


def test_without_a_notary_nothing_is_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "no-notary"
    data.mkdir()
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(data))
    path = make_notebook(tmp_path / "plain.ipynb", ["x = 41", "print(x + 1)"])
    add_output(path)
    assert os.listdir(data) == []


# --- a trusted notebook's signature computed from the tree written, not the file read back ---

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


def jupyter_signature(notary: NotebookNotary, path: Path) -> str:
    """What Jupyter computes when it opens the file."""
    return str(notary.compute_signature(nbformat.read(path, as_version=4)))


def session_on(path: Path) -> Session:
    return Session(FileNotebook(path), Workspace(path.parent))


@pytest.mark.parametrize("name", sorted(p.name for p in CORPUS.glob("*.ipynb")))
def test_a_trusted_corpus_notebook_stays_trusted_through_staging_approving_and_rollback(
    tmp_path: Path, notary: NotebookNotary, name: str
) -> None:
    path = tmp_path / name
    shutil.copy(CORPUS / name, path)
    notary.sign(nbformat.read(path, as_version=4))
    session = session_on(path)
    first = session.cells()[0].id
    session.propose.edit_cell(first, "ünïcode = 'ok'  # edited", reason="trust")
    assert trusted(notary, path)  # a save that changed only planbook's record
    assert session.approve().ok
    assert trusted(notary, path)  # and one that changed a cell
    assert "ünïcode" in path.read_text(encoding="utf-8")
    session.rollback()
    assert trusted(notary, path)
    session.close()


def test_the_tree_signer_equals_jupyters_signature_on_awkward_values(
    tmp_path: Path, notary: NotebookNotary
) -> None:
    """Every kind of value the walk meets (floats, big ints, booleans, null, nested lists,
    non-ASCII keys, split and unsplit strings, transient keys Jupyter drops) signs as Jupyter
    signs the file it reads."""
    path = make_notebook(tmp_path / "awkward.ipynb", ["x = 1\ny = 2\n", "print('é')"])
    nb = nbformat.read(path, as_version=4)
    nb.metadata["orig_nbformat"] = 3
    nb.metadata["weird"] = {
        "ß": [1.5, 1e300, -0.0, 10**30, True, None, [["deep"], {"z": 1, "a": 2}]],
        "empty": {},
        "blob": "é" + "x" * 10_000,  # a long string: a piece of its own in the walk's bytes
    }
    nb.cells[0].metadata["trusted"] = True
    nb.cells[1].outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="é\nline two\n"),
        nbformat.v4.new_output(
            "display_data", data={"text/plain": "a\nb", "image/png": "aGVsbG8=\n"}
        ),
    ]
    nbformat.write(nb, path)
    notary.sign(nbformat.read(path, as_version=4))
    doc = FileNotebook(path)
    with doc.transaction():
        doc.set_metadata("planbook_probe", {"list": ["a\n", "b"], "n": 3.25})
    assert trusted(notary, path)
    with doc.transaction():  # the second walk reuses the unchanged containers' pieces
        doc.set_metadata("planbook_probe", {"list": [], "n": 4})
    assert trusted(notary, path)
    assert doc._trust._signer._after_cells is not None  # the tree was signed, not the file


def test_a_staged_step_on_a_trusted_notebook_reads_nothing_back(
    tmp_path: Path, notary: NotebookNotary, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The signature of a trusted notebook comes from the tree planbook wrote, and the file's
    trust is asked from its JSON: no step reads the file through nbformat (93 ms a save on
    2,000 cells when it did)."""
    path = make_notebook(tmp_path / "mine.ipynb", [f"x{i} = {i}" for i in range(50)])
    notary.sign(nbformat.read(path, as_version=4))
    reads: list[int] = []
    real = nbformat.reads
    monkeypatch.setattr(nbformat, "reads", lambda *a, **k: reads.append(1) or real(*a, **k))
    session = session_on(path)
    session.propose.edit_cell("c50", "x49 = 0", reason="trust")  # its trust asked: from JSON
    for i in range(5):
        session.propose.edit_cell(f"c{i + 1}", f"x{i} = -{i}", reason="trust")
    assert reads == []
    monkeypatch.undo()
    assert trusted(notary, path)
    session.close()


def test_a_notebook_jupyter_would_change_is_not_signed_from_its_tree(
    notary: NotebookNotary,
) -> None:
    """Where ``nbformat.reads`` would change more than the walk can tell apart (cells without
    ids get new random ones; two cells with one id; an older format), the tree is not what
    Jupyter signs: the signer says so (the file is then read back as Jupyter reads it)."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    good = json.loads(nbformat.writes(nb))
    signer = TreeSigner()
    assert signer.signature(notary, good) == jupyter_signature_of(notary, good)
    no_id = copy.deepcopy(good)
    del no_id["cells"][0]["id"]
    twice = copy.deepcopy(good)
    twice["cells"].append(copy.deepcopy(twice["cells"][0]))
    older = {**copy.deepcopy(good), "nbformat_minor": 4}
    for tree in (no_id, twice, older):
        assert signer.signature(notary, tree) is None


def jupyter_signature_of(notary: NotebookNotary, tree: dict[str, Any]) -> str:
    return str(notary.compute_signature(nbformat.reads(json.dumps(tree), as_version=4)))


JSON_LEAF = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
JSON_VALUE = st.recursive(
    JSON_LEAF,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(metadata=st.dictionaries(st.text(max_size=8), JSON_VALUE, max_size=5), cell_meta=JSON_VALUE)
def test_the_tree_signer_equals_jupyter_on_any_metadata(
    notary_for_property: NotebookNotary, metadata: dict[str, Any], cell_meta: Any
) -> None:
    """Any JSON the metadata may hold signs from the tree as Jupyter signs it from the file;
    a second signature with the cells kept (the HMAC state after them reused) too."""
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("a = 1\nb = 2\n"), nbformat.v4.new_markdown_cell("é")]
    )
    nb.cells[0].metadata["anything"] = cell_meta
    tree = json.loads(nbformat.writes(nb))  # sources split into lines, as files hold them
    signer = TreeSigner()
    assert signer.signature(notary_for_property, tree) == jupyter_signature_of(
        notary_for_property, tree
    )
    tree["metadata"] = {**tree["metadata"], **metadata}
    assert signer.signature(notary_for_property, tree) == jupyter_signature_of(
        notary_for_property, tree
    )
    # and the file's trust, asked from its bytes as a file holds them
    ours = Notary(Path(notary_for_property.data_dir), notary_for_property.secret)
    data = nbformat.writes(nbformat.from_dict(tree)).encode()
    assert trust._file_signature(data, ours) == jupyter_signature_of(notary_for_property, tree)


# --- the notary asked without nbformat -------------------------------------------------------

ASK_IN_A_FRESH_PROCESS = """
import sys
from pathlib import Path
from planbook.documents.file import FileNotebook
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace

path = Path(sys.argv[1])
session = Session(FileNotebook(path), Workspace(path.parent))
session.propose.edit_cell("c1", "x = 40", reason="trust")
heavy = sorted(m for m in ("nbformat", "jsonschema", "rfc3987_syntax") if m in sys.modules)
print("IMPORTED", ",".join(heavy) or "nothing")
"""


def test_a_kernels_first_save_of_a_trusted_notebook_imports_no_nbformat(
    tmp_path: Path, notary: NotebookNotary
) -> None:
    """A process's first save where a notary exists asks it without importing nbformat, whose
    import (jsonschema, its grammar parsers) made a kernel's first staged step take 2.4 to 3.2
    s here; the notebook stays trusted, its signature found by Jupyter's own notary."""
    path = make_notebook(tmp_path / "mine.ipynb", ["x = 41", "print(x + 1)"])
    notary.sign(nbformat.read(path, as_version=4))
    done = subprocess.run(
        [sys.executable, "-c", ASK_IN_A_FRESH_PROCESS, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "IMPORTED nothing" in done.stdout, done.stdout
    assert "x = 40" in path.read_text()
    assert trusted(notary, path)


def test_an_unreadable_signatures_database_costs_the_trust_not_the_save(
    tmp_path: Path, notary: NotebookNotary, caplog: pytest.LogCaptureFixture
) -> None:
    """A signatures database that is not one (corrupted, another program's file): the step is
    staged and saved, the notebook is not signed, one line says why, and the file is left as
    it was for Jupyter to deal with (it renames it when it next opens it)."""
    path = make_notebook(tmp_path / "mine.ipynb", ["x = 41", "print(x + 1)"])
    notary.sign(nbformat.read(path, as_version=4))
    db = Path(notary.db_file)
    notary.close()
    garbage = b"this is not a database " * 200
    db.write_bytes(garbage)
    trust._notaries.clear()  # (a notary kept open by an earlier test of this process)
    session = session_on(path)
    with caplog.at_level("WARNING", logger="planbook"):
        step = session.propose.edit_cell("c1", "x = 40", reason="trust")
    assert step.status == "pending"
    assert "x = 40" in path.read_text()  # the step, in the plan saved in the file
    assert db.read_bytes() == garbage
    lines = [r.getMessage() for r in caplog.records if "could not be used" in r.getMessage()]
    assert lines and str(db) in lines[0]
    session.close()


def test_a_full_signatures_database_is_culled_as_jupyter_culls_it(
    tmp_path: Path, notary: NotebookNotary
) -> None:
    """Past 65,535 signatures the oldest quarter goes, as Jupyter's notary culls: the rows
    planbook writes sort among Jupyter's by the same text, so the notebook it just signed is
    kept, and older ones written by either go first."""
    path = make_notebook(tmp_path / "mine.ipynb", ["x = 41", "print(x + 1)"])
    notary.sign(nbformat.read(path, as_version=4))  # a row written by Jupyter, now
    db = notary.store.db
    rows = [
        ("sha256", f"{n:064x}", f"2020-01-01T{n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}+00:00")
        for n in range(CACHE_SIZE)
    ]  # older than any row written today, in the order of their numbers
    db.executemany(
        "INSERT INTO nbsignatures (algorithm, signature, last_seen) VALUES (?, ?, ?)", rows
    )
    db.commit()
    trust._notaries.clear()
    session = session_on(path)
    session.propose.edit_cell("c1", "x = 40", reason="trust")
    (count,) = db.execute("SELECT Count(*) FROM nbsignatures").fetchone()
    assert count == int(0.75 * CACHE_SIZE)
    assert trusted(notary, path)  # planbook's new signature was kept
    newest_old = rows[-1][1]
    oldest = rows[0][1]
    kept = {r[0] for r in db.execute("SELECT signature FROM nbsignatures")}
    assert newest_old in kept and oldest not in kept
    # today's rows, Jupyter's and planbook's, in the one text the cull sorts them by (read as
    # text: Jupyter's connection parses a timestamp column, and fails on the text it writes)
    seen = "SELECT CAST(last_seen AS TEXT) FROM nbsignatures WHERE substr(last_seen, 1, 4) > '2020'"
    today = [r[0] for r in db.execute(seen)]
    assert len(today) >= 2 and {t[10] for t in today} == {"T"}
    session.close()


def test_a_notebook_nested_past_any_parser_saves_where_a_notary_exists(
    tmp_path: Path, notary: NotebookNotary, caplog: pytest.LogCaptureFixture
) -> None:
    """Metadata nested deeper than a JSON parser follows (planbook keeps it as it was read):
    asking the notary about the file fails, and that must cost the trust only, in one line,
    never the save."""
    path = make_notebook(tmp_path / "deep.ipynb", ["x = 41", "print(x + 1)"])
    notary.sign(nbformat.read(path, as_version=4))  # (the notary's secret is made here)
    nb = json.loads(path.read_text())
    nb["metadata"]["deep"] = "HERE"
    depth = 100_000
    path.write_text(json.dumps(nb, indent=1).replace('"HERE"', "[" * depth + "]" * depth))
    with pytest.raises(RecursionError):
        json.loads(path.read_text())
    session = session_on(path)
    with caplog.at_level("WARNING", logger="planbook"):
        step = session.propose.edit_cell("c1", "x = 40", reason="trust")
    assert step.status == "pending"
    assert "x = 40" in path.read_text()
    assert path.read_text().count("[") >= depth  # the deep value kept as it was
    assert any("trust could not be kept" in r.getMessage() for r in caplog.records)
    session.close()


STAGE_MANY = """
import sys
from pathlib import Path
from planbook.documents.file import FileNotebook
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace

path = Path(sys.argv[1])
session = Session(FileNotebook(path), Workspace(path.parent))
for i in range(15):
    session.propose.edit_cell("c1", f"x = {i}", reason="trust")
print("STAGED", len(session.current_plan().steps))
"""


def test_several_processes_sign_at_once_and_every_notebook_stays_trusted(
    tmp_path: Path, notary: NotebookNotary
) -> None:
    """Three processes saving trusted notebooks (each save signs what it wrote) while Jupyter's
    own notary writes to the same database: sqlite takes turns, no save fails or warns, and
    every notebook is trusted at the end, as Jupyter's notary checks it."""
    paths = []
    for n in range(3):
        path = make_notebook(tmp_path / f"mine{n}.ipynb", ["x = 41", "print(x + 1)"])
        notary.sign(nbformat.read(path, as_version=4))
        paths.append(path)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", STAGE_MANY, str(path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for path in paths
    ]
    for n in range(100):  # Jupyter signing other notebooks meanwhile, as it opens them
        notary.store.store_signature(f"{n:064x}", notary.algorithm)
        # (paced: a writer committing in a tight loop starves sqlite's other writers, whose
        # busy handler sleeps between tries; Jupyter signs a notebook as a person opens one)
        time.sleep(0.01)
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-2000:]
        assert "STAGED 15" in out
        assert "could not" not in err, err[-2000:]
    for path in paths:
        assert "x = 14" in path.read_text()
        assert trusted(notary, path)
