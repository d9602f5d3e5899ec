"""Debian's Chromium for Playwright (never a downloaded browser), with the flags this machine
needs: background networking off, or Chromium's connections are refused many at a time."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = os.environ.get("PLANBOOK_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_path() -> str:
    """The browser to launch; a missing one is an error, never a reason to skip a test."""
    if Path(CHROMIUM).exists() or shutil.which(CHROMIUM):
        return CHROMIUM
    raise FileNotFoundError(
        f"no Chromium at {CHROMIUM}: install it with `apt-get install -y chromium`"
    )


@contextmanager
def chromium_context(profile: Path, *, width: int = 1200, height: int = 1000) -> Iterator[Any]:
    """A persistent Chromium context (its own profile folder) under Playwright, with the
    timeout every browser test waits for a JupyterLab page with (30 s: 2 shared cores)."""
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=30_000)
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile),
            executable_path=chromium_path(),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": width, "height": height},
        )
        try:
            yield context
        finally:
            context.close()
