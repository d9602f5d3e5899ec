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
"""

from __future__ import annotations

import ast
import asyncio
import json
import time
import urllib.parse
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from planbook.documents.locate import ServerInfo, running_servers
from planbook.errors import KernelUnreachable, UsageMistake
from planbook.present.variables import is_plain_name, probe

#: How long a kernel has to answer (it answers only between cells: a running cell holds it).
ANSWER_SECONDS = 10.0
#: The key of planbook's one user expression in the request and the reply.
KEY = "planbook"


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


class RunningServers:
    """The kernels of the Jupyter servers running on this machine (stdio: ``planbook mcp``)."""

    async def evaluate(self, path: Path, shown: str, expression: str) -> str:
        return await asyncio.to_thread(self._evaluate, path, shown, expression)

    def _evaluate(self, path: Path, shown: str, expression: str) -> str:
        found = kernel_of(path)
        if found is None:
            raise no_kernel(shown)
        server, kernel_id = found
        return answer_of(ask_over_websocket(server, kernel_id, expression, shown), shown)


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
    server: ServerInfo, kernel_id: str, expression: str, shown: str
) -> dict[str, Any]:
    """Send the silent request over the server's kernel websocket; the execute_reply content."""
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
    deadline = time.monotonic() + ANSWER_SECONDS
    try:
        ws = websocket.create_connection(url, timeout=ANSWER_SECONDS)
    except (OSError, websocket.WebSocketException) as exc:
        raise KernelUnreachable(f"cannot reach the kernel of {shown} ({exc})") from None
    try:
        ws.send(json.dumps(request))
        while (left := deadline - time.monotonic()) > 0:
            ws.settimeout(left)
            message = json.loads(ws.recv())
            if message.get("msg_type") == "execute_reply" and (
                message.get("parent_header", {}).get("msg_id") == msg_id
            ):
                content: dict[str, Any] = message.get("content") or {}
                return content
    except (OSError, ValueError, websocket.WebSocketException):
        pass
    finally:
        ws.close()
    raise busy(shown)
