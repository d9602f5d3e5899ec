"""The bounded inspection of a kernel's variables: every variable with its type, shape and a
short value (``listing``), or one variable in more detail (``describe``: shape, dtypes, columns,
head). The in-kernel agent calls these on its own namespace; planbook's MCP server sends this
module's own source to a notebook's kernel as one silent expression (``probe``), so both show
the same thing.

Nothing a caller typed is evaluated: a name is a plain identifier, checked before anything
runs and carried as a string literal; only well-known, side-effect-free methods of pandas and
numpy objects are called, anything else gets a truncated ``repr``. This module imports nothing
but the standard library: a kernel may have no planbook installed.
"""

from __future__ import annotations

import functools
import importlib
import keyword
import reprlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

#: Characters of one answer.
LIMIT = 4000
#: Variables one listing names; the rest are counted.
MAX_LISTED = 200
#: Characters of one variable's short value in a listing.
VALUE_CHARS = 80

_short = reprlib.Repr()
_short.maxstring = 200
_short.maxother = 200
_short.maxlist = _short.maxtuple = _short.maxset = _short.maxdict = 12


def is_plain_name(name: str) -> bool:
    """A variable's name and nothing else: no attribute, index, call or keyword."""
    return name.isidentifier() and not keyword.iskeyword(name)


def _bounded(text: str) -> str:
    return text if len(text) <= LIMIT else text[:LIMIT] + f"\n[... {len(text) - LIMIT} more chars]"


def _type_name(value: Any) -> str:
    kind = type(value)
    return (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )


def describe(name: str, namespace: Mapping[str, Any]) -> str:
    """One variable: its type, then its size, shape, dtypes, columns and head (bounded)."""
    if not is_plain_name(name):
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
    return _bounded("\n".join(lines))


def listing(namespace: Mapping[str, Any], hidden: Iterable[str] = ()) -> str:
    """Every variable the person defined (not modules, not names starting with ``_``, not the
    kernel's own ``hidden`` ones), one line each: name, type, shape or length, short value."""
    skip = set(hidden)
    names = sorted(
        k
        for k, v in namespace.items()
        if k.isidentifier()
        and not k.startswith("_")
        and k not in skip
        and type(v).__name__ != "module"
    )
    if not names:
        return "no variables yet: nothing has been defined in this kernel"
    lines = [f"{len(names)} variables (name: type, shape or length, short value):"]
    for name in names[:MAX_LISTED]:
        lines.append(_line(name, namespace[name]))
    if len(names) > MAX_LISTED:
        lines.append(f"[... {len(names) - MAX_LISTED} more]")
    lines.append("describe one in detail: give its name")
    return _bounded("\n".join(lines))


def _line(name: str, value: Any) -> str:
    line = f"{name}: {_type_name(value)}"
    try:
        shape = getattr(value, "shape", None) if _is_array_like(value) else None
        if isinstance(shape, tuple):
            return f"{line}, shape {shape}"
        if isinstance(value, (str, bytes, list, tuple, dict, set, frozenset)):
            line += f", len {len(value)}"
        if callable(value):
            return line
        text = " ".join(_short.repr(value).split())
        if len(text) > VALUE_CHARS:
            text = text[: VALUE_CHARS - 3] + "..."
        return f"{line} = {text}"
    except Exception as exc:
        return f"{line} (could not describe it: {type(exc).__name__})"


def _is_array_like(value: Any) -> bool:
    """numpy, pandas and their kin: their shape is a cheap, side-effect-free attribute."""
    return type(value).__module__.split(".")[0] in ("numpy", "pandas", "polars", "torch", "xarray")


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


def in_kernel(name: str | None) -> str:
    """Run inside an IPython kernel (by ``probe``): the listing, or one variable described,
    over the kernel's user namespace."""
    from IPython import get_ipython  # heavy: IPython, in the kernel this source is sent to

    shell = get_ipython()
    if shell is None:
        return "no IPython kernel here"
    if name is None:
        return listing(shell.user_ns, getattr(shell, "user_ns_hidden", {}))
    return describe(name, shell.user_ns)


@functools.cache
def _source() -> str:
    return Path(__file__).read_text(encoding="utf-8")


def probe(name: str | None) -> str:
    """The one expression planbook asks a kernel to evaluate (as a silent user expression,
    outside its history): this module's source executed in a namespace of its own (nothing
    lands in the person's), then ``in_kernel(name)``. ``name`` must be a plain name; it is
    embedded as a string literal only."""
    if name is not None and not is_plain_name(name):
        raise ValueError(f"{name!r} is not a plain variable name")
    return (
        f"(lambda g: (exec({_source()!r}, g), g['in_kernel']({name!r}))[1])"
        "({'__name__': 'planbook_variables'})"
    )
