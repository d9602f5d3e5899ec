"""The kernel attached to a served notebook, asked one silent question: its variables, through
present/variables.py's bounded inspection.

What runs in the kernel is planbook's own expression, sent as a user expression of an empty,
silent execute request (``store_history=False``): nothing is printed or broadcast, the
notebook's execution counter does not move, and nothing lands in the person's namespace. A
client's words never reach the kernel as code: a variable's name is checked to be a plain name
before anything is sent, and travels as a string literal.

Where the kernel is: a served notebook has one when it is open in a running Jupyter server
that planbook finds (the servers that wrote their ``jpserver-*.json``, as the kernel's own
session finds its server: documents/locate.py), reached over that server's kernel websocket.
The endpoint inside a Jupyter server asks its own kernel manager instead (surfaces/mcp/).

The same reach finds where a proposal must go through the kernel rather than the file: the
notebook's server has no collaboration (its open page is the notebook) and a page is connected
to the kernel (the server's ``connections`` count): ``RunningServers.page_kernel``; and where
it must go through the notebook's collaboration room: the server whose root holds the notebook
has collaboration on (``RunningServers.room_of``).
"""

from __future__ import annotations

import ast
import asyncio
import json
import threading
import time
import urllib.error
import urllib.parse
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from planbook.documents.locate import ServerInfo, running_servers
from planbook.errors import KernelUnreachable, UsageMistake
from planbook.present.variables import is_plain_name, probe
from planbook.sessions.served_rooms import ServerRoute

#: How long a kernel has to answer (it answers only between cells: a running cell holds it).
ANSWER_SECONDS = 10.0
#: The key of planbook's one user expression in the request and the reply.
KEY = "planbook"
#: How often a wait for the kernel's answer looks whether the kernel is still there.
ALIVE_SECONDS = 0.5
#: What a kernel's status says when the kernel that heard the request is gone.
STOPPED_STATES = frozenset({"restarting", "dead", "starting"})
#: What its server says of a kernel that is not running a cell (any more).
IDLE_STATES = STOPPED_STATES | {"idle"}


class KernelReach(Protocol):
    """How a served notebook's kernel is asked one expression: its evaluated ``text/plain``,
    or KernelUnreachable (one line) when no kernel is attached or it does not answer."""

    async def evaluate(self, path: Path, shown: str, expression: str) -> str: ...


def no_kernel(shown: str) -> KernelUnreachable:
    return KernelUnreachable(f"no kernel is attached to {shown}: open it in Jupyter")


def busy(shown: str) -> KernelUnreachable:
    return KernelUnreachable(
        f"the kernel of {shown} did not answer within {ANSWER_SECONDS:g} s (a cell may be "
        "running): ask again when it is idle; nothing ran in it"
    )


def died(shown: str) -> KernelUnreachable:
    return KernelUnreachable(
        f"the kernel of {shown} stopped before it answered (it died or was restarted); "
        "nothing ran in it"
    )


def execute_content(expression: str) -> dict[str, Any]:
    """An execute request that runs no code of its own and evaluates ``expression`` silently."""
    return {
        "code": "",
        "silent": True,
        "store_history": False,
        "user_expressions": {KEY: expression},
        "allow_stdin": False,
        "stop_on_error": False,
    }


def answer_of(
    reply: Mapping[str, Any], shown: str, doing: str = "could not inspect its variables"
) -> str:
    """The text planbook's expression evaluated to, from an execute_reply's content; an
    expression that raised is said as the kernel of ``shown`` ``doing``, then the error."""
    result = (reply.get("user_expressions") or {}).get(KEY)
    if not isinstance(result, dict):
        raise KernelUnreachable(
            f"the kernel of {shown} answered without planbook's expression "
            f"({reply.get('status', 'no status')}): is it a Python (IPython) kernel?"
        )
    if result.get("status") != "ok":
        raise KernelUnreachable(
            f"the kernel of {shown} {doing}: "
            f"{result.get('ename', 'error')}: {result.get('evalue', '')}"
        )
    plain = (result.get("data") or {}).get("text/plain", "")
    try:
        value = ast.literal_eval(plain)
    except (ValueError, SyntaxError):
        value = plain
    return str(value)


async def read_variables(kernels: KernelReach, path: Path, shown: str, name: str | None) -> str:
    """The kernel's variables (``name`` None), or one variable described."""
    if name is not None and not is_plain_name(name):
        raise UsageMistake(
            f"{name!r} is not a plain variable name: give just the name, such as `df` "
            "(nothing is evaluated)"
        )
    return await kernels.evaluate(path, shown, probe(name))


@dataclass(frozen=True)
class PageKernel:
    """A kernel a page is connected to, on a running server without collaboration."""

    server: ServerInfo
    kernel_id: str


@dataclass(frozen=True)
class ServedRoom:
    """A running server with collaboration on whose root folder holds a notebook."""

    route: ServerRoute
    #: The server's root folder: its rooms are named relative to it.
    root: Path


class RunningServers:
    """The kernels of the Jupyter servers running on this machine (stdio: ``planbook mcp``)."""

    def __init__(self) -> None:
        #: Whether a server (by URL and process) has collaboration on: asked once, it does not
        #: change while the server runs.
        self._collaboration: dict[tuple[str, int | None], bool] = {}
        self._lock = threading.Lock()

    async def evaluate(self, path: Path, shown: str, expression: str) -> str:
        return await asyncio.to_thread(self._evaluate, path, shown, expression)

    def _evaluate(self, path: Path, shown: str, expression: str) -> str:
        found = kernel_of(path)
        if found is None:
            raise no_kernel(shown)
        server, kernel_id = found
        return answer_of(ask_over_websocket(server, kernel_id, expression, shown), shown)

    async def page_kernel(self, path: Path, shown: str) -> PageKernel | None:
        """The kernel of the notebook's session on a running server without collaboration,
        when a page is connected to it; None otherwise (the file then)."""
        return await asyncio.to_thread(self._page_kernel, path)

    def _page_kernel(self, path: Path) -> PageKernel | None:
        found = kernel_of(path)
        if found is None:
            return None
        server, kernel_id = found
        if self._has_collaboration(server) or connections(server, kernel_id) < 1:
            return None
        return PageKernel(server, kernel_id)

    def room_of(self, path: Path) -> ServedRoom | None:
        """The running server with collaboration on whose root holds ``path`` (open in a page
        or not: the server saves its room over any write of the file), from a worker thread;
        None when there is none (the page's kernel or the file then)."""
        real = path.resolve()
        for server in running_servers():
            if server.root_dir is None:
                continue
            root = server.root_dir.resolve()
            if not real.is_relative_to(root) or not self._has_collaboration(server):
                continue
            return ServedRoom(ServerRoute(server.url, server.token, collaboration=True), root)
        return None

    def _has_collaboration(self, server: ServerInfo) -> bool:
        key = (server.url, server.pid)
        with self._lock:
            known = self._collaboration.get(key)
        if known is None:
            known = server.collaboration() == "on"
            with self._lock:
                self._collaboration[key] = known
        return known

    async def ask(
        self,
        kernel: PageKernel,
        expression: str,
        shown: str,
        seconds: float,
        when_busy: Callable[[str], KernelUnreachable],
        when_died: Callable[[str], KernelUnreachable],
    ) -> dict[str, Any]:
        """``ask_over_websocket`` from a worker thread (kernel_staging.py's ``PageKernels``)."""
        where = (kernel.server, kernel.kernel_id)
        return await asyncio.to_thread(
            ask_over_websocket, *where, expression, shown, seconds, when_busy, when_died
        )


def _kernel_model(server: ServerInfo, kernel_id: str) -> dict[str, Any] | None:
    """The kernel's model as its server keeps it; None when the server no longer has the kernel
    (HTTP 404: shut down) or does not answer; empty when it answered with another error."""
    try:
        model = server.api("GET", f"api/kernels/{urllib.parse.quote(kernel_id)}", timeout=2.0)
    except urllib.error.HTTPError as exc:
        return None if exc.code == 404 else {}
    except (OSError, ValueError):
        return None
    return model if isinstance(model, dict) else {}


def connections(server: ServerInfo, kernel_id: str) -> int:
    """How many websockets (open pages, consoles) the kernel has now; 0 when it is gone."""
    return int((_kernel_model(server, kernel_id) or {}).get("connections", 0) or 0)


def _state(server: ServerInfo, kernel_id: str) -> str:
    """The kernel's execution state as its server tracks it; "gone" when the server no longer
    has it (shut down) or no longer answers."""
    model = _kernel_model(server, kernel_id)
    if model is None:
        return "gone"
    return str(model.get("execution_state") or "unknown")


def kernel_of(path: Path) -> tuple[ServerInfo, str] | None:
    """The running server whose notebook session holds ``path``, and its kernel's id."""
    for server in running_servers():
        if server.root_dir is None:
            continue
        try:
            rel = path.resolve().relative_to(server.root_dir.resolve()).as_posix()
            sessions = server.api("GET", "api/sessions", timeout=2.0)
        except (ValueError, OSError):
            continue
        for entry in sessions or []:
            kernel = entry.get("kernel") or {}
            if entry.get("path") == rel and kernel.get("id"):
                return server, str(kernel["id"])
    return None


def ask_over_websocket(
    server: ServerInfo,
    kernel_id: str,
    expression: str,
    shown: str,
    seconds: float = ANSWER_SECONDS,
    when_busy: Callable[[str], KernelUnreachable] = busy,
    when_died: Callable[[str], KernelUnreachable] = died,
) -> dict[str, Any]:
    """Send the silent request over the server's kernel websocket; the execute_reply content.
    Not answered within ``seconds``: ``when_busy``; the kernel restarted, shut down or the
    websocket closed meanwhile: ``when_died``."""
    import websocket  # heavy: websocket-client (a dependency of jupyter_server)

    base = server.url.replace("http", "ws", 1)
    query = urllib.parse.urlencode({"token": server.token}) if server.token else ""
    url = f"{base}api/kernels/{urllib.parse.quote(kernel_id)}/channels" + (
        f"?{query}" if query else ""
    )
    msg_id = uuid.uuid4().hex
    request = {
        "header": {
            "msg_id": msg_id,
            "username": "planbook",
            "session": uuid.uuid4().hex,
            "msg_type": "execute_request",
            "version": "5.3",
        },
        "parent_header": {},
        "metadata": {},
        "channel": "shell",
        "buffers": [],
        "content": execute_content(expression),
    }
    deadline = time.monotonic() + seconds
    quiet = 0
    try:
        ws = websocket.create_connection(url, timeout=min(seconds, ANSWER_SECONDS))
    except (OSError, websocket.WebSocketException) as exc:
        raise KernelUnreachable(f"cannot reach the kernel of {shown} ({exc})") from None
    try:
        ws.send(json.dumps(request))
        while (left := deadline - time.monotonic()) > 0:
            ws.settimeout(min(left, ALIVE_SECONDS))
            try:
                message = json.loads(ws.recv())
            except websocket.WebSocketTimeoutException:
                # A restarted kernel says nothing on this socket: the new process never heard
                # the request, and goes idle. A kernel seen not busy twice, half a second
                # apart, without answering has lost it (an idle one runs a queued request at
                # once); a busy one is still running the cell before it.
                state = _state(server, kernel_id)
                if state == "gone":
                    raise when_died(shown) from None
                quiet = quiet + 1 if state in IDLE_STATES else 0
                if quiet >= 2:
                    raise when_died(shown) from None
                continue
            except ValueError:  # a frame that is not one JSON message: not the reply
                continue
            if not isinstance(message, dict):
                continue
            if _stopped(message):
                raise when_died(shown)
            if message.get("msg_type") == "execute_reply" and (
                message.get("parent_header", {}).get("msg_id") == msg_id
            ):
                content: dict[str, Any] = message.get("content") or {}
                return content
    except (OSError, websocket.WebSocketException):
        # the connection to the kernel broke under the call (closed, reset: a restart or a
        # shutdown drops it): not a busy kernel, whose socket stays open and quiet
        raise when_died(shown) from None
    finally:
        ws.close()
    raise when_busy(shown)


def _stopped(message: Mapping[str, Any]) -> bool:
    """A kernel status saying the kernel that heard the request is gone (a restart starts a
    new process that never heard it)."""
    if message.get("msg_type") != "status":
        return False
    return (message.get("content") or {}).get("execution_state") in STOPPED_STATES
