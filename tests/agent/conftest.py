"""Shared fixtures for the agent tests: asyncio via anyio's pytest plugin, never a real model."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

import planbook
from planbook.agent.context import decisions_of
from planbook.agent.decisions import Decision
from planbook.agent.state import state_of
from planbook.documents.memory import MemoryNotebook
from planbook.model.cell import Cell
from planbook.workspace.files import Workspace


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _no_model_requests() -> Iterator[None]:
    # Only FunctionModel/TestModel (and the loopback server, which opts in) may answer.
    import pydantic_ai.models

    before = pydantic_ai.models.ALLOW_MODEL_REQUESTS
    pydantic_ai.models.ALLOW_MODEL_REQUESTS = False
    yield
    pydantic_ai.models.ALLOW_MODEL_REQUESTS = before


CELLS = [
    Cell(id="load", source="import pandas as pd\ndf = pd.DataFrame({'a': [1, None, 3]})"),
    Cell(id="show", source="df.head()"),
]


def make_session(root: Path) -> planbook.Session:
    return planbook.Session(MemoryNotebook(cells=[c.model_copy() for c in CELLS]), Workspace(root))


@pytest.fixture
def session(tmp_path: Path) -> planbook.Session:
    (tmp_path / "notes.txt").write_text("hello\n", encoding="utf-8")
    return make_session(tmp_path)


async def next_decision(session: planbook.Session, *, seen: int = 0) -> Decision:
    """Wait (without a deadline of its own; pytest-timeout bounds it) for an open decision."""
    decisions = decisions_of(session)
    while True:
        pending = decisions.pending()
        if pending:
            return pending[0]
        run = state_of(session).run
        if run is not None and run.done():
            raise AssertionError(f"the run ended without asking: {run.status} {run.error}")
        await asyncio.sleep(0.01)
