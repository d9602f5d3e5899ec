"""Which cells `planbook approve` re-runs first: not planbook's, nor those built on them."""

from __future__ import annotations

import nbformat

from planbook.surfaces.cli.rerun import choose, names


def cells(*sources: str) -> list[nbformat.NotebookNode]:
    out = [nbformat.v4.new_code_cell(s) for s in sources]
    for n, cell in enumerate(out):
        cell["id"] = f"c{n}"
    return out


def ids(group: list[nbformat.NotebookNode]) -> list[str]:
    return [c["id"] for c in group]


def test_cells_built_on_planbook_cells_are_left_out() -> None:
    choice = choose(
        cells(
            "import pandas as pd\ndf = pd.DataFrame({'a': [1]})",  # c0 runs
            "import planbook\npb = planbook.session()\nwork = '.'",  # c1 uses planbook
            "%%propose --after c0\ndf.a.sum()",  # c2 a magic
            "print(pb.cells())",  # c3 needs pb
            "total = df.a.sum()",  # c4 runs
            "print(work, total)",  # c5 needs work
            "work = 'elsewhere'\nprint(work)",  # c6 defines work itself: runs
            "print(work)",  # c7 fine again
            "",  # empty: ignored
        )
    )
    assert ids(choice.run) == ["c0", "c4", "c6", "c7"]
    assert ids(choice.uses_planbook) == ["c1", "c2"]
    assert ids(choice.builds_on_planbook) == ["c3", "c5"]
    assert choice.skipped == 4


def test_names_read_and_bound() -> None:
    used, bound = names(
        "import numpy as np\nfrom os import path\ndef f(x):\n    return np.sum(x)\ny = f(z)"
    )
    assert {"np", "path", "f", "y"} <= bound
    assert {"np", "f", "z"} <= used
    # Magics become Python as IPython would turn them; what does not parse says nothing.
    assert names("%matplotlib inline\nfig = plot(df)")[1] == {"fig"}
    assert names("def broken(:\n") == (set(), set())


def test_markdown_cells_are_not_code() -> None:
    md = nbformat.v4.new_markdown_cell("import planbook")
    assert choose([md]).run == [] and choose([md]).skipped == 0
