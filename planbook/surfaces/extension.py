"""``%load_ext planbook``: the magics, the agent's ``%config Planbook``, and the comm target of
the in-cell review, registered without loading what they stand for.

Loading costs the same on any notebook and imports nothing heavy (issue 25: 30 ms in a fresh
kernel, flat in notebook size): each magic is a stand-in that loads the real magics at its
first call (magics.py, magics_propose.py, magics_agent.py: the Session, the engine, pydantic),
and the comm target loads the channel when a page opens its comm (surfaces/comm/channel.py).
The kernel's notebook is opened by its first use: the first magic, which then says what it
opened (magic_common.py), the first page, or ``planbook.session()``.
"""

from __future__ import annotations

from typing import Any

from planbook.errors import speak_as
from planbook.sessions.kernel_probe import headless_kernel
from planbook.surfaces.comm.protocol import PROTOCOL, TARGET
from planbook.surfaces.kernel_config import add_configurable

#: Every magic planbook adds, as (kind, name); the real ones replace these stand-ins at first
#: use (tests/test_extension.py checks that they are the same set).
MAGICS = (
    ("line", "plan"),
    ("cell", "plan"),
    ("line", "approve"),
    ("line", "reject"),
    ("line", "checkpoints"),
    ("line", "rollback"),
    ("line", "mode"),
    ("line", "propose"),
    ("cell", "propose"),
    ("line", "answer"),
)
#: What loading can say without opening the notebook: every word of it true before that.
LOADED = (
    "planbook: loaded; this kernel's notebook opens at first use (`%plan` shows it, with its "
    "mode and plan)"
)


class StandIn:
    """One of planbook's magics until its first call, which loads the real magics in place of
    every stand-in and hands the call to the real one; ``%plan?`` shows the real help."""

    def __init__(self, shell: Any, kind: str, name: str) -> None:
        self.shell, self.kind, self.name = shell, kind, name
        self.__name__ = name

    def real(self) -> Any:
        # heavy: pydantic, the Session and the engine (the magics' first use, not the load)
        from planbook.surfaces.magics import register

        found = self.shell.find_magic(self.name, self.kind)
        if isinstance(found, StandIn):
            register(self.shell)
            found = self.shell.find_magic(self.name, self.kind)
        if found is None or isinstance(found, StandIn):  # the MAGICS list is out of date
            raise RuntimeError(f"planbook registers no {self.kind} magic {self.name!r}")
        return found

    def __call__(self, *args: Any) -> Any:
        return self.real()(*args)

    def getdoc(self) -> str | None:
        """IPython's ``%name?`` asks for this before ``__doc__``."""
        doc = self.real().__doc__
        return doc if isinstance(doc, str) else None


def load(ipython: Any) -> None:
    speak_as("magics")  # errors in this kernel name the magics as their fix
    for kind, name in MAGICS:
        ipython.register_magic_function(StandIn(ipython, kind, name), kind, name)
    add_configurable(ipython)
    print(LOADED)
    listen_for_pages(ipython)


def listen_for_pages(ipython: Any) -> None:
    """Register the comm target (a page opens its comm at once), and tell a page already open
    that planbook is here: it answers with a comm of its own (js/labextension connection.ts)."""
    if getattr(ipython, "kernel", None) is None:
        return  # a terminal IPython: no front end to talk to
    try:
        # heavy: the comm package
        from comm import create_comm, get_comm_manager
    except ImportError:  # an old ipykernel without the comm package: the panel still works
        return
    get_comm_manager().register_target(TARGET, page_opened)
    if not headless_kernel(ipython.user_ns):  # nbconvert and papermill log a comm nobody takes
        create_comm(target_name=TARGET, data={"protocol": PROTOCOL})


def page_opened(comm: Any, msg: dict[str, Any]) -> None:
    """A page opened its comm: the channel links it to the kernel's session (opened now if
    this is its first use)."""
    # heavy: pydantic, the Session and the engine (the first page, not the load)
    from planbook.surfaces.comm.channel import link_page

    link_page(comm, msg.get("content", {}).get("data") if isinstance(msg, dict) else None)
