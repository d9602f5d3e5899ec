"""What a process that planbook runs as a program (the ``planbook`` command, ``python -m
planbook``, the stdio MCP server) sets up before it imports anything heavy."""

from __future__ import annotations

import sys

#: Optional modules of our dependencies that planbook's own processes go without.
UNUSED_OPTIONAL_MODULES = (
    # jsonschema (which nbformat imports) imports rfc3987_syntax whenever it is installed (the
    # "format-nongpl" extra, which jupyter-events requires), and that builds about 35 Earley
    # parsers at import: 2.4 s of the 3.4 s `planbook show` took on a 2-core machine like CI
    # (python-jsonschema issue 1428). They check only the "iri" formats: nbformat checks no
    # format at all, and jsonschema goes without them when the module is missing.
    "rfc3987_syntax",
)


def as_a_program() -> None:
    """Mark the unused optional modules missing (an entry of None in ``sys.modules`` makes
    their import fail as if they were not installed). Only in planbook's own processes: a
    kernel or a Jupyter server that loads planbook keeps what its user installed."""
    for name in UNUSED_OPTIONAL_MODULES:
        # None is the documented mark of a module that cannot be imported; typeshed's
        # ``sys.modules`` type leaves it out.
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]
