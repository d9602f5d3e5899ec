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


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A test that fails with a page open leaves the page as it was then (a screenshot and the
    text of its cells) in tests/artifacts: taken here, before the fixtures close the page."""
    report = yield
    page = getattr(item, "funcargs", {}).get("page")
    if report.when == "call" and report.failed and page is not None:
        name = item.name.replace("/", "_")[:120]
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        try:
            page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
            cells = page.locator(".jp-Cell").all_inner_texts()
            (ARTIFACTS / f"{name}.txt").write_text("\n---\n".join(cells))
            # CI keeps only the terminal: the review boxes and notifications, in short, there
            seen = page.locator(".pb-cell-review, .jp-toast-message").all_inner_texts()
            report.sections.append(
                ("planbook on the page when it failed", "\n---\n".join(seen)[:3000] or "(none)")
            )
        except Exception as exc:  # the page may be gone with what failed
            (ARTIFACTS / f"{name}.txt").write_text(f"no picture: {exc}")
    return report
