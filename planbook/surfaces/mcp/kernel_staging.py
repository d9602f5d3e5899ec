"""Proposals to a notebook whose open page holds it, on a Jupyter server without collaboration.

There the page's model is the notebook: a step written into the file would never show on its
cell, and the page's next save (Ctrl+S, autosave) would write the page's model over it. So when
the notebook's Jupyter session has a kernel with a page connected (a websocket), the proposal is
staged THROUGH that kernel: one silent execute (no history, no output, the execution count does
not move) of planbook's own call (in_kernel.py), the request passed as one string literal of
JSON, never as code. The kernel's session stages it into the page over the in-cell review's
comm, marked with the client's origin; its answer (the step, or planbook's one line) is the
tool's answer. What the page holds is then read the same way (``read``), so read_cell,
read_plan and wait_for_review see the step, the person's decision and the outputs before the
page is saved.

When it cannot be staged there, nothing is written to the file the page would overwrite:
- planbook is not loaded in that kernel: one line asking for ``%load_ext planbook`` (loading it
  for the person would change their kernel beyond staging: imports, magics, a comm);
- the kernel is busy (a cell runs): the execute waits in the kernel's queue; after
  ``STAGE_SECONDS`` the tool says so in one line, and the request, carrying that deadline,
  stages nothing when the kernel reaches it later;
- the kernel stops mid-call: one line (the step may be in the page only, never in the file);
- the kernel's planbook follows another notebook, or expects a page none connected: one line.
A notebook with no kernel, or a kernel no page is connected to, is the file's, as before.

How the kernel is reached is the one thing the two MCP servers differ in (``PageKernels``):
the endpoint inside a Jupyter server asks its own kernel manager (server_kernels.py); the stdio
server finds the Jupyter server that has the notebook open by its runtime files and asks over
that server's REST API and kernel websocket (sessions/served_kernels.py). The decisions, the
request and every one line are the same, here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import anyio.from_thread

from planbook.errors import KernelUnreachable, PlanbookError, UsageMistake
from planbook.sessions.page_copy import page_copy
from planbook.sessions.served import ServedDocument, ServedNotebooks
from planbook.sessions.served_kernels import answer_of

#: How long a proposal waits for a busy kernel; the request expires then.
STAGE_SECONDS = 10.0
#: How much longer the endpoint listens, so a kernel that reached the request just before it
#: expired is still heard (and one that reaches it later answers "expired").
GRACE_SECONDS = 2.0
#: How long a read waits for the kernel before it answers from the page's last copy.
READ_SECONDS = 3.0
#: A copy of the page this young is read again without asking the kernel (a wait's poll reads
#: the record and then the cells of the steps that ran).
FRESH_SECONDS = 0.3
#: A notebook found held by no page (or its kernel without planbook) is not asked again for
#: this long, when every read follows the pages (a wait polls twice a second).
NO_PAGE_SECONDS = 2.0
#: What the expression answers when planbook is not loaded in the kernel.
NOT_LOADED = json.dumps({"status": "not_loaded"})


def expression(function: str, request: dict[str, Any]) -> str:
    """planbook's call of ``in_kernel.<function>`` with ``request`` as one string literal (ASCII
    JSON in ``repr``: quotes, backslashes and line separators all escaped): only when the
    person loaded planbook in this kernel; else the NOT_LOADED answer, and nothing is imported."""
    literal = repr(json.dumps(request))
    return (
        f"__import__('planbook.surfaces.mcp.in_kernel', fromlist=['{function}'])"
        f".{function}({literal}) "
        "if 'planbook' in __import__('IPython').get_ipython().extension_manager.loaded "
        f"else {NOT_LOADED!r}"
    )


def busy(shown: str) -> KernelUnreachable:
    return KernelUnreachable(
        f"the kernel of {shown} is busy (a cell has run for over {STAGE_SECONDS:g} s): nothing "
        "was staged (the request expires unanswered); propose again when the kernel is idle"
    )


def died(shown: str) -> KernelUnreachable:
    return KernelUnreachable(
        f"the kernel of {shown} stopped before it answered (it died or was restarted): the "
        "step was not written to the file; if it was staged, the open page's plan shows it: "
        "read_plan before proposing again"
    )


def refusal(status: str, said: dict[str, Any], shown: str) -> PlanbookError:
    """The one line for a kernel that could not stage the proposal."""
    if status == "not_loaded":
        return KernelUnreachable(
            f"{shown} is open in Jupyter, but planbook is not loaded in its kernel: the page "
            "could not show the step and its next save would overwrite a step written to the "
            "file, so nothing was staged; ask the person to run `%load_ext planbook` in the "
            "notebook, then propose again"
        )
    if status == "no_link":
        return KernelUnreachable(
            f"planbook in the kernel of {shown} edits it through its open page, but no page "
            "with planbook's extension is connected: nothing was staged; ask the person to "
            "open (or reload) the notebook in JupyterLab, then propose again"
        )
    if status == "elsewhere":
        return KernelUnreachable(
            f"{said.get('message', 'planbook in this kernel edits another notebook')}, not "
            f"{shown}: nothing was staged; the person can switch it with `%plan use {shown}`"
        )
    if status == "expired":
        return busy(shown)
    return UsageMistake(str(said.get("message") or f"the kernel of {shown} said {status}"))


#: A kernel a page is connected to, as one way of reaching kernels names it.
K = TypeVar("K")


class PageKernels(Protocol[K]):
    """How the kernel of a notebook's open page is found and asked."""

    async def page_kernel(self, path: Path, shown: str) -> K | None:
        """The kernel of the notebook's Jupyter session when a page (a websocket) is connected
        to it, on a server without collaboration; None otherwise (the file then)."""
        ...

    async def ask(
        self,
        kernel: K,
        expression: str,
        shown: str,
        seconds: float,
        when_busy: Callable[[str], KernelUnreachable],
        when_died: Callable[[str], KernelUnreachable],
    ) -> dict[str, Any]:
        """The execute_reply content of the silent ``expression``; ``when_busy`` when it is not
        answered within ``seconds``, ``when_died`` when the kernel stops meanwhile."""
        ...


class KernelStaging(Generic[K]):
    """Proposals and reads through the kernel of a notebook whose open page holds it."""

    def __init__(self, kernels: PageKernels[K], root: Path, follow_pages: bool = False) -> None:
        self.kernels = kernels
        self.root = root
        #: Every read asks whether a page holds the notebook, not only after a proposal went
        #: through one: the stdio server, a process per agent session, which a client that
        #: reconnects (or a second agent) starts afresh while the page keeps the steps.
        self.follow_pages = follow_pages
        #: Notebooks a proposal was staged into (or read from) through their page: their reads
        #: ask the page.
        self.through_page: set[Path] = set()
        self._copies: dict[Path, tuple[float, ServedDocument]] = {}
        self._no_page: dict[Path, float] = {}

    def _shown(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    async def _call(
        self, kernel: K, shown: str, function: str, request: dict[str, Any], seconds: float
    ) -> dict[str, Any]:
        reply = await self.kernels.ask(
            kernel,
            expression(function, request),
            shown,
            seconds,
            when_busy=busy,
            when_died=died,
        )
        text = answer_of(reply, shown, doing="could not run planbook's call")
        try:
            said = json.loads(text)
        except ValueError:
            said = None
        if not isinstance(said, dict):
            raise KernelUnreachable(f"the kernel of {shown} answered what planbook cannot read")
        return said

    async def stage(
        self, path: Path, operation: str, arguments: dict[str, Any], origin: str
    ) -> tuple[str, str] | None:
        """The staged step's id and the tool's answer; None when no page holds the notebook
        (the caller stages into the file); a PlanbookError (one line) when it cannot."""
        shown = self._shown(path)
        kernel = await self.kernels.page_kernel(path, shown)
        if kernel is None:
            return None
        request = {
            "notebook": str(path),
            "shown": shown,
            "operation": operation,
            "arguments": arguments,
            "origin": origin,
            "expires": time.time() + STAGE_SECONDS,
        }
        said = await self._call(kernel, shown, "stage", request, STAGE_SECONDS + GRACE_SECONDS)
        status = str(said.get("status"))
        if status == "staged":
            self.through_page.add(path)
            self._copies.pop(path, None)
            return str(said["step_id"]), str(said["text"])
        if status == "no_page":
            return None
        raise refusal(status, said, shown)

    # --- reading what the page holds -------------------------------------------------------
    def read(self, path: Path) -> ServedDocument | None:
        """The page's notebook for a notebook staged into through its page (with
        ``follow_pages``, any notebook a page holds), from a worker thread of the endpoint:
        asked of its kernel, or its last copy while the kernel is busy (a step it runs holds
        it); None when no page holds it (any more): the file then."""
        if path not in self.through_page:
            if not self.follow_pages:
                return None
            if time.monotonic() - self._no_page.get(path, -NO_PAGE_SECONDS) < NO_PAGE_SECONDS:
                return None
        kept = self._copies.get(path)
        if kept is not None and time.monotonic() - kept[0] < FRESH_SECONDS:
            return kept[1]
        try:
            copy = anyio.from_thread.run(self._fetch, path)
        except (KernelUnreachable, RuntimeError):  # busy or gone, or not an endpoint thread
            if kept is None:  # nothing read from it yet: the file, without waiting again soon
                self._no_page[path] = time.monotonic()
            return kept[1] if kept is not None else None
        if copy is None:
            self.through_page.discard(path)
            self._copies.pop(path, None)
            self._no_page[path] = time.monotonic()
            return None
        self.through_page.add(path)
        self._copies[path] = (time.monotonic(), copy)
        return copy

    async def _fetch(self, path: Path) -> ServedDocument | None:
        shown = self._shown(path)
        kernel = await self.kernels.page_kernel(path, shown)
        if kernel is None:
            return None
        request = {"notebook": str(path), "shown": shown}
        said = await self._call(kernel, shown, "page", request, READ_SECONDS)
        if said.get("status") != "page":
            return None
        return page_copy(str(said["notebook"]), path)

    def stamp(self, path: Path) -> object | None:
        """What wait_for_review watches for a notebook read through its page (the page has no
        change stamp the endpoint sees: it changes every half second, so the record is read
        again that often), or None for the others."""
        if path not in self.through_page:
            return None
        return ("page", int(time.monotonic() * 2))


class PagesTarget(ServedNotebooks):
    """Served notebooks of which one an open page holds (no collaboration) is read through its
    kernel once a proposal was staged there (``pages``), the others as files."""

    #: Set by whoever has the kernels (the server extension, or the stdio server).
    pages: KernelStaging[Any] | None = None

    def document(self, path: Path) -> ServedDocument:
        in_page = self.pages.read(path) if self.pages is not None else None
        return in_page if in_page is not None else super().document(path)

    def signature(self, path: Path) -> object:
        stamp = self.pages.stamp(path) if self.pages is not None else None
        return stamp if stamp is not None else super().signature(path)
