"""Debian's Chromium for Playwright (never a downloaded browser), with the flags this machine
needs: background networking off, or Chromium's connections are refused many at a time."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

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
