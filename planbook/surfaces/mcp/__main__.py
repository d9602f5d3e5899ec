"""``python -m planbook.surfaces.mcp NOTEBOOK_OR_FOLDER``: the stdio server, without the CLI."""

from __future__ import annotations

import sys
from pathlib import Path

from planbook.errors import PlanbookError
from planbook.surfaces.mcp.server import serve_stdio
from planbook.surfaces.program import as_a_program


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m planbook.surfaces.mcp NOTEBOOK_OR_FOLDER", file=sys.stderr)
        return 2
    try:
        serve_stdio(Path(argv[0]))
    except PlanbookError as exc:
        print(f"planbook mcp: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    as_a_program()
    sys.exit(main(sys.argv[1:]))
