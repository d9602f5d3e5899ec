"""The document contract the memory and file backends pass, run against the live backend."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

import tests.test_documents as contract
from planbook.documents.live.document import LiveNotebook, open_live
from tests.support.jupyter_server import RunningServer

pytestmark = pytest.mark.server


@pytest.fixture
def two_cells(server: RunningServer, request: pytest.FixtureRequest) -> Iterator[LiveNotebook]:
    name = f"contract-{request.node.name}.ipynb"  # a room of its own per test
    path = server.write_notebook(name, ["a", "b"])
    nb = json.loads(path.read_text())
    for i, cell in enumerate(nb["cells"], 1):
        cell["id"] = f"c{i}"
    path.write_text(json.dumps(nb))
    doc = open_live(server.url, server.token, name)
    yield doc
    doc.close()


def test_every_operation_by_cell_id(two_cells: LiveNotebook) -> None:
    contract.test_every_operation_by_cell_id(two_cells)


def test_a_failed_transaction_applies_nothing(two_cells: LiveNotebook) -> None:
    contract.test_a_failed_transaction_applies_nothing(two_cells)
