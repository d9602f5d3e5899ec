"""Describe a variable of the user's namespace: type, size, shape, dtypes, columns, head.

Bounded output, and never arbitrary code: the name must be a plain identifier (no attribute
access, no indexing, nothing evaluated), and only well-known, side-effect-free methods of
pandas/numpy objects are called. Anything else gets a truncated ``repr``.
"""

from __future__ import annotations

import importlib
import reprlib
from collections.abc import Mapping
from typing import Any

from planbook.agent.state import state_of
from planbook.sessions.session import Session

LIMIT = 4000

_short = reprlib.Repr()
_short.maxstring = 200
_short.maxother = 200
_short.maxlist = _short.maxtuple = _short.maxset = _short.maxdict = 12


def user_namespace(session: Session) -> Mapping[str, Any]:
    """The kernel's user namespace (or the one ``state_of(session).user_ns`` gives)."""
    ns = state_of(session).user_ns
    if ns is not None:
        return ns
    try:
        from IPython import get_ipython  # heavy: IPython
    except ImportError:
        return {}
    shell = get_ipython()
    return shell.user_ns if shell is not None else {}


def describe(name: str, namespace: Mapping[str, Any]) -> str:
    if not name.isidentifier():
        return f"{name!r} is not a plain variable name; give just the name, such as `df`"
    if name not in namespace:
        names = sorted(k for k in namespace if not k.startswith("_") and k.isidentifier())
        shown = ", ".join(names[:40]) + (" ..." if len(names) > 40 else "")
        return f"no variable {name!r} in the user's namespace; defined: {shown or 'nothing yet'}"
    value = namespace[name]
    kind = type(value)
    lines = [f"{name}: {kind.__module__}.{kind.__qualname__}"]
    try:
        lines += _details(value)
    except Exception as exc:
        lines.append(f"(could not describe it: {type(exc).__name__}: {exc})")
    text = "\n".join(lines)
    return text if len(text) <= LIMIT else text[:LIMIT] + f"\n[... {len(text) - LIMIT} more chars]"


def _details(value: Any) -> list[str]:
    module = type(value).__module__.split(".")[0]
    if module == "pandas":
        return _pandas(value)
    if module == "numpy" and hasattr(value, "shape") and hasattr(value, "dtype"):
        import numpy as np  # heavy: numpy, only if the kernel has it

        return [
            f"shape: {value.shape}",
            f"dtype: {value.dtype}",
            np.array2string(value, threshold=50, edgeitems=3, max_line_width=100),
        ]
    lines = []
    if isinstance(value, (str, bytes, list, tuple, dict, set, frozenset)):
        lines.append(f"len: {len(value)}")
    lines.append(f"value: {_short.repr(value)}")
    return lines


def _pandas(value: Any) -> list[str]:

    pd: Any = importlib.import_module("pandas")  # no stubs installed; only plain calls below

    if isinstance(value, pd.DataFrame):
        dtypes = ", ".join(f"{c}: {t}" for c, t in list(value.dtypes.items())[:50])
        return [
            f"shape: {value.shape}",
            f"columns: {list(value.columns)[:50]}",
            f"dtypes: {dtypes}",
            f"missing values per column: {dict(list(value.isna().sum().items())[:50])}",
            "head:",
            value.head(5).to_string(max_cols=20, max_colwidth=40),
        ]
    if isinstance(value, pd.Series):
        return [
            f"length: {len(value)}",
            f"dtype: {value.dtype}",
            f"name: {value.name!r}",
            "head:",
            value.head(5).to_string(max_rows=5),
        ]
    return [f"value: {_short.repr(value)}"]
