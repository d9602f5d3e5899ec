"""The panel's front end as anywidget wants it: one ES module and one stylesheet.

anywidget loads ``_esm`` from a blob URL, where relative imports cannot resolve, so the small
modules in ``js/`` are joined here, in import order, with their local import lines removed.
No Node and no build step: the files stay plain ES modules that node's test runner imports one
by one, and this join is a few string operations at import time.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[2]
#: Where the front end lives: ``planbook/_js`` in an installed wheel (package data), else the
#: checkout's ``js/`` next to the package.
JS_DIRS = (_PACKAGE / "_js", _PACKAGE.parent / "js")
ENTRY = "panel.js"
_LOCAL_IMPORT = re.compile(r'^import\s*\{[^}]*\}\s*from\s*"\./([\w.-]+\.js)";[ \t]*\n?', re.M)


def js_dir() -> Path:
    for folder in JS_DIRS:
        if (folder / ENTRY).is_file():
            return folder
    raise FileNotFoundError(
        f"planbook's panel front end is missing (looked for {ENTRY} in "
        f"{', '.join(map(str, JS_DIRS))}); reinstall planbook"
    )


def _join(name: str, seen: set[str], out: list[str]) -> None:
    if name in seen:
        return
    seen.add(name)
    text = (js_dir() / name).read_text(encoding="utf-8")
    for dep in _LOCAL_IMPORT.findall(text):
        _join(dep, seen, out)
    out.append(f"// ---- {name}\n" + _LOCAL_IMPORT.sub("", text))


@cache
def esm_source() -> str:
    """panel.js and every module it imports, as one module (dependencies first)."""
    out: list[str] = []
    _join(ENTRY, set(), out)
    return "\n".join(out)


def css_path() -> Path:
    return js_dir() / "panel.css"
