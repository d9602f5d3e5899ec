"""``planbook mcp [NOTEBOOK_OR_FOLDER]``: serve a notebook (or every notebook in a folder) to
any agent over MCP on stdio, the form Claude Code, Codex, Cursor and VS Code start by command.

The target is checked before serving, so a wrong one is one line on stderr and an exit code,
never a server that fails on its first call; the MCP SDK (the ``mcp`` extra) is imported only
here, and its absence is one line naming the extra.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from planbook.errors import CliError, MetadataError, PlanbookError
from planbook.sessions.open_file import read_notebook_json, read_state
from planbook.surfaces.cli.exit_codes import (
    EXIT_DEPENDENCY,
    EXIT_METADATA,
    EXIT_MISSING,
    EXIT_NOT_NOTEBOOK,
    EXIT_OK,
    EXIT_USAGE,
)
from planbook.surfaces.cli.paths import shown


def cmd_mcp(args: argparse.Namespace) -> int:
    target = Path(args.target).expanduser()
    if not target.exists():
        raise CliError(
            EXIT_MISSING, f"{args.target}: no such file or folder; give a notebook or a folder"
        )
    if not target.is_dir():
        if target.suffix != ".ipynb":
            raise CliError(EXIT_NOT_NOTEBOOK, f"{args.target}: not a notebook (.ipynb) or a folder")
        _check_notebook(target, args.target)
    try:
        # heavy: the mcp SDK (the mcp extra)
        from planbook.surfaces.mcp.server import serve_stdio
    except ModuleNotFoundError as exc:
        missing = (exc.name or "?").partition(".")[0]
        if missing == "planbook":
            raise
        raise CliError(
            EXIT_DEPENDENCY,
            f"planbook mcp needs the MCP SDK, and {missing} is not installed: "
            "pip install 'planbook[mcp]'",
        ) from None
    try:
        serve_stdio(target)
    except PlanbookError as exc:
        raise CliError(EXIT_USAGE, f"{args.target}: {exc}") from None
    return EXIT_OK


def _check_notebook(path: Path, given: str) -> None:
    """A notebook the server cannot read, or whose planbook metadata is broken, is one line
    now. (JSON, not nbformat: its schema validator costs seconds an agent waits for.)"""
    try:
        nb = read_notebook_json(path)
    except (OSError, ValueError):
        nb = None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise CliError(EXIT_NOT_NOTEBOOK, f"{given}: not a Jupyter notebook; pass an .ipynb file")
    metadata = nb.get("metadata")
    try:
        read_state(metadata.get("planbook") if isinstance(metadata, dict) else None, path.name)
    except MetadataError as exc:
        raise CliError(EXIT_METADATA, exc.said_to("cli", notebook=shown(path))) from None
