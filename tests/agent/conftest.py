"""Shared fixtures for the agent tests: asyncio via anyio's pytest plugin, no model requests."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
