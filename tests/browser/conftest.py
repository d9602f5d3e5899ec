"""Chromium (Debian's, never a downloaded one) driven by Playwright, and a place for artifacts."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import CHROMIUM_ARGS, chromium_path

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
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"),
            executable_path=chromium_path(),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1200, "height": 1000},
        )
        try:
            yield context
        finally:
            context.close()
