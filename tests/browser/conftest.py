"""Chromium (Debian's, never a downloaded one) driven by Playwright, and a place for artifacts."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import chromium_context

#: Screenshots and logs the browser tests keep (tests/artifacts is ignored by git).
ARTIFACTS = Path(
    os.environ.get("PLANBOOK_ARTIFACTS", Path(__file__).resolve().parents[1] / "artifacts")
)


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    with chromium_context(tmp_path / "chromium-profile") as context:
        yield context
