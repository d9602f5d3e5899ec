"""A notebook that lives only in this process: for tests and frontends the kernel cannot reach."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from planbook.documents.deep_json import plain_copy
from planbook.documents.nbnode import NodeNotebook, assign_ids, normalize, to_raw
from planbook.documents.serializer import JUPYTER
from planbook.model.cell import Cell


class MemoryNotebook(NodeNotebook):
    backend = "memory"

    def __init__(
        self,
        cells: Iterable[Cell | str] = (),
        *,
        notebook: dict[str, Any] | None = None,
        description: str = "memory: changes stay in this kernel and are not saved to any file",
    ) -> None:
        # A plain JSON copy: the caller's notebook (often an nbformat NotebookNode) stays its own.
        nb = normalize(plain_copy(notebook)) if notebook is not None else _empty()
        raws = list(nb["cells"])
        for item in cells:
            cell = item if isinstance(item, Cell) else Cell(id=f"cell-{len(raws) + 1}", source=item)
            raws.append(to_raw(cell, JUPYTER))
        nb["cells"] = raws
        assign_ids(nb)
        super().__init__(nb)
        self.description = description


def _empty() -> dict[str, Any]:
    return {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
