"""A notebook that lives only in this process: for tests and frontends the kernel cannot reach."""

from __future__ import annotations

from collections.abc import Iterable

import nbformat
from nbformat import NotebookNode

from planbook.documents.base import Cell
from planbook.documents.nbnode import NodeNotebook, to_node


class MemoryNotebook(NodeNotebook):
    backend = "memory"

    def __init__(
        self,
        cells: Iterable[Cell | str] = (),
        *,
        notebook: NotebookNode | None = None,
        description: str = "memory: changes stay in this kernel and are not saved to any file",
    ) -> None:
        nb = notebook if notebook is not None else nbformat.v4.new_notebook()
        for item in cells:
            cell = item if isinstance(item, Cell) else Cell(id=_next_id(nb), source=item)
            nb.cells.append(to_node(cell))
        super().__init__(nb)
        self.description = description


def _next_id(nb: NotebookNode) -> str:
    return f"cell-{len(nb.cells) + 1}"
