"""The namespace the agent's inspect_variable tool reads: the kernel's user namespace (or the
one a test or an embedding gives). What it shows of a variable is present/variables.py's
``describe``, the same bounded inspection planbook's MCP server runs in a notebook's kernel.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from planbook.agent.state import state_of
from planbook.sessions.session import Session


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
