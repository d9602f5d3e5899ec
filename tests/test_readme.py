"""README.md as a reader meets it, on the repository's page and on the package index (which shows
it without the repository beside it): its links and images work there, and its command table
(like docs/cli.md's) lists exactly the commands `planbook --help` lists."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def help_commands() -> list[str]:
    """The commands as `planbook --help` lists them, in its order."""
    out = subprocess.run(
        [sys.executable, "-m", "planbook", "--help"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    return re.findall(r"^    (\w+) ", out, re.M)


def table_commands(page: str) -> list[str]:
    """The commands of a page's command table: its rows `| `planbook CMD ...` | ... |`."""
    text = (ROOT / page).read_text(encoding="utf-8")
    return re.findall(r"^\| `planbook (\w+)", text, re.M)


def test_the_command_tables_list_exactly_the_commands_of_help() -> None:
    commands = help_commands()
    assert {"show", "approve", "gc", "strip", "mcp"} <= set(commands)
    for page in ("README.md", "docs/cli.md"):
        listed = table_commands(page)
        assert len(listed) == len(set(listed)), (page, listed)
        assert set(listed) == set(commands), (page, set(commands) ^ set(listed))


def test_readme_links_point_at_files_that_exist() -> None:
    """Every link and image of the README that is not a web address names a file of this
    repository. (They stay relative until the project has a public address: the package
    index needs absolute ones, built from a Homepage in pyproject.toml's [project.urls].)"""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    links = [link for link in LINK.findall(text) if "://" not in link]
    assert len(links) > 5
    for link in links:
        assert (ROOT / link.partition("#")[0]).is_file(), link
    assert "OWNER" not in text
