"""``%%propose`` / ``%propose`` in a real kernel: every operation a magic user can stage
(insert, replace, write a file, delete, move, run a cell), mistakes in one line with the
magic's words, and a re-run cell that proposes what an open step already makes."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from tests.conftest import make_notebook, sources
from tests.kernel_helper import kernel

pytestmark = pytest.mark.kernel


@pytest.fixture
def nb(tmp_path: Path) -> Path:
    return make_notebook(tmp_path / "sales.ipynb", ["import math", "x = 21", "x * 2", "y = 0"])


def test_every_operation_from_the_magics(nb: Path) -> None:
    with kernel(nb.parent, JPY_SESSION_NAME=str(nb)) as k:
        k.run("%load_ext planbook")
        lines = [
            ('%propose --delete c4 --reason "not used"', "staged step 1 (delete_cell, high risk)"),
            ("%propose --move c3 --before c1", "staged step 2 (move_cell"),
            ("%propose --move c1 --after c2", "staged step 3 (move_cell"),
            (
                '%%propose --write notes/summary.md --reason "the numbers"\n# Summary\nx is 21',
                "staged step 4 (write_file",
            ),
            ("%propose --run-cell c2 --reason 'define x'", "staged step 5 (run_cell"),
            ("%%propose --replace c3 --run\nprint(x * 3)", "staged step 6 (edit_cell"),
        ]
        for line, said in lines:
            reply = k.run(line)
            assert reply.status == "ok" and said in reply.stdout, (line, reply.text)
        assert [s for _, s in sources(nb)] == ["import math", "x = 21", "x * 2", "y = 0"]
        assert not (nb.parent / "notes").exists()
        reasons = k.run(
            "import planbook; print([s.reason for s in planbook.session().current_plan().steps])"
        )
        assert reasons.stdout.strip() == "['not used', '', '', 'the numbers', 'define x', '']"

        report = k.run("%approve")
        assert "step 6 (edit_cell): done" in report.stdout, report.text
        cells = nbformat.read(nb, as_version=4).cells
        assert [c.id for c in cells] == ["c3", "c2", "c1"]
        assert cells[0].source == "print(x * 3)" and cells[0].outputs[0]["text"] == "63\n"
        assert (nb.parent / "notes" / "summary.md").read_text() == "# Summary\nx is 21\n"
        assert k.run("print(x)").stdout == "21\n"  # the run_cell step ran c2 in this kernel


MISTAKES = [
    ("%propose --delete c1 --after c2", "--delete takes no --after or --before (that is --move)"),
    ("%propose --delete c1 --run-cell c2", "give one of --delete, --run-cell, not both"),
    ("%propose --delete c1 --run", "--delete takes no --run"),
    ("%%propose --delete c1\nx = 1", "--delete takes no cell body: write it on one line"),
    ("%propose --replace c1", "`%propose --replace` needs the text below it: use `%%propose"),
    ("%propose", "`%propose` needs the text below it"),
    ("%%propose --write a.txt --after c1\nhi", "--write takes no --after or --before"),
    ("%%propose --after c1 --before c2\nx", "give one of --after or --before, not both"),
    ("%propose --move c1 --before c1", "cell 'c1' cannot move before itself"),
    ("%propose --delete nope", "cell 'nope' is not in the saved file yet"),
    ("%%propose --write ../outside.txt\nx", "outside"),
    # the engine's refusals speak the magic's words, never the Python API's `run=True`
    ("%%propose --after c1 --markdown --run\n# t", "stage it without `%%propose --run`"),
]


def test_mistakes_are_one_line_in_the_magics_words_and_stage_nothing(nb: Path) -> None:
    with kernel(nb.parent, JPY_SESSION_NAME=str(nb)) as k:
        k.run("%load_ext planbook")
        before = nb.read_bytes()
        for line, message in MISTAKES:
            reply = k.run(line)
            assert reply.status == "error", line
            assert "UsageError" in reply.stderr and message in reply.stderr, (line, reply.text)
            assert "Traceback" not in reply.text and "run=True" not in reply.text, line
            assert nb.read_bytes() == before, line
        help_text = k.run(
            "print(get_ipython().magics_manager.magics['cell']['propose'].__doc__)"
        ).stdout
        assert "--run-cell CELL" in help_text and "--write PATH" in help_text


def test_a_rerun_cell_finds_its_step_already_staged(nb: Path) -> None:
    with kernel(nb.parent, JPY_SESSION_NAME=str(nb)) as k:
        k.run("%load_ext planbook")
        k.run("%mode")  # the first magic says what it opened: the next ones say only theirs
        k.run("import planbook; pb = planbook.session()")
        first = k.run("pb.propose.delete_cell('c4', reason='unused');")
        assert first.status == "ok" and first.stdout == "", first.text
        # the cell is still on screen, pending deletion: running the cell again is one line
        again = k.run("pb.propose.delete_cell('c4', reason='unused');")
        assert again.status == "ok", again.text
        assert again.stdout == "planbook: already staged as step 1 (delete_cell, pending)\n"
        magic = k.run("%propose --delete c4")
        assert magic.stdout == "planbook: already staged as step 1 (delete_cell, pending)\n"
        # the same for every change an open step already makes in the same way
        k.run("%%propose --after c1\nz = 1")
        k.run("%%propose --replace c2 --run\nx = 22")
        k.run("%%propose --write notes.md\nhello")
        k.run("%propose --run-cell c3")
        for line, number in [
            ("%%propose --after c1\nz = 1", 2),
            ("%%propose --replace c2 --run\nx = 22", 3),
            ("%%propose --write notes.md\nhello", 4),
            ("%propose --run-cell c3", 5),
            ("pb.propose.insert_cell('z = 1', after='c1');", 2),
        ]:
            reply = k.run(line)
            assert reply.stdout.startswith(f"planbook: already staged as step {number} ("), (
                line,
                reply.text,
            )
        # a different change is a new step; a change to the cell being deleted is refused
        assert "staged step 6" in k.run("%%propose --replace c2\nx = 23").stdout
        refused = k.run("%%propose --replace c4\ny = 1")
        assert "cell 'c4' is to be deleted by step 1 (pending)" in refused.stderr, refused.text
        assert "`%reject 1`" in refused.stderr and "Traceback" not in refused.text
        count = k.run("print(len(pb.current_plan().steps))")
        assert count.stdout == "6\n"
