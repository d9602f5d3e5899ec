"""Write the module map of docs/architecture.md from the modules' own docstrings.

The map sits between two marker lines in the page; everything else there is written by hand.
``python tools/make_architecture.py`` rewrites it; tests/test_architecture.py fails when the
map and the package disagree, so the page cannot drift from the code.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "planbook"
PAGE = ROOT / "docs" / "architecture.md"
BEGIN = "<!-- module map: written by tools/make_architecture.py -->"
END = "<!-- end of the module map -->"


def first_sentence(doc: str) -> str:
    text = " ".join(doc.split())
    for end in (". ", ".\n"):
        cut = text.find(end)
        if cut > 0:
            return text[: cut + 1]
    return text


def module_map() -> str:
    """One line per module, grouped by folder: its name and its one job."""
    rows: list[str] = []
    folder = None
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT)
        here = rel.parent.as_posix()
        if here != folder:
            folder = here
            rows += ["", f"**{here}/**", ""]
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        rows.append(f"- `{rel.name}`: {first_sentence(doc) or 'NO DOCSTRING'}")
    return "\n".join(rows).strip() + "\n"


def rewritten(page: str) -> str:
    head, _, rest = page.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n\n{module_map()}\n{END}{tail}"


def main() -> int:
    PAGE.write_text(rewritten(PAGE.read_text(encoding="utf-8")), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
