"""Which code cells ``planbook approve`` re-runs before approving, and why it leaves others out.

The kernel that runs the steps starts empty, so the notebook's own cells run first to give the
steps the variables they use. A cell that uses planbook itself would stage steps again, so it is
left out; so is a cell that uses a name only such a cell defines (``pb``, a temp folder set up
next to it): it could only fail with a NameError, which reads like trouble when nothing is wrong.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

#: Cells that use planbook: its magics, or the word itself (an import, ``planbook.session()``).
USES_PLANBOOK = re.compile(
    r"\bplanbook\b|^\s*%%?(propose|approve|reject|rollback|plan|mode|checkpoints|answer)\b", re.M
)


@dataclass
class RerunChoice:
    """The code cells to re-run, in order, and the ones left out."""

    run: list[Any] = field(default_factory=list)
    uses_planbook: list[Any] = field(default_factory=list)
    builds_on_planbook: list[Any] = field(default_factory=list)

    @property
    def skipped(self) -> int:
        return len(self.uses_planbook) + len(self.builds_on_planbook)


def choose(cells: Iterable[Any]) -> RerunChoice:
    """``cells``: nbformat cells; non-empty code cells are sorted into the three groups."""
    choice = RerunChoice()
    # Names whose only definition so far is in a cell that is not re-run.
    unavailable: set[str] = set()
    for cell in cells:
        if cell.get("cell_type") != "code" or not str(cell.get("source", "")).strip():
            continue
        source = str(cell["source"])
        used, bound = names(source)
        if USES_PLANBOOK.search(source):
            choice.uses_planbook.append(cell)
            unavailable |= bound
        elif (used - bound) & unavailable:  # (a name the cell sets itself is its own)
            choice.builds_on_planbook.append(cell)
            unavailable |= bound
        else:
            choice.run.append(cell)
            unavailable -= bound
    return choice


def names(source: str) -> tuple[set[str], set[str]]:
    """The names a cell reads and the names it binds (magics turned into Python as IPython
    would); a cell that does not parse reads and binds nothing we can know of."""
    from IPython.core.inputtransformer2 import TransformerManager  # heavy: IPython

    manager: Any = TransformerManager  # untyped library: keep its Any in one place
    try:
        tree = ast.parse(manager().transform_cell(source))
    except (SyntaxError, ValueError):
        return set(), set()
    used: set[str] = set()
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (used if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                bound.add(alias.asname or alias.name.split(".")[0])
    return used, bound
