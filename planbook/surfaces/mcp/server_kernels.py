"""The kernels of the Jupyter server the MCP endpoint lives in: a notebook's kernel is the one
of its session in the server's session manager, asked through the server's kernel manager
(a kernel client of its own, on the server's event loop; no websocket, no token needed)."""

from __future__ import annotations

import inspect
import queue
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from planbook.errors import KernelUnreachable
from planbook.sessions.served_kernels import (
    ALIVE_SECONDS,
    ANSWER_SECONDS,
    answer_of,
    busy,
    died,
    execute_content,
    no_kernel,
)


class ServerKernels:
    """``KernelReach`` over the server's own session and kernel managers."""

    def __init__(self, serverapp: Any) -> None:
        self.serverapp = serverapp

    async def evaluate(self, path: Path, shown: str, expression: str) -> str:
        kernel_id = await self.kernel_id(shown)
        if kernel_id is None:
            raise no_kernel(shown)
        return answer_of(await self.ask(kernel_id, expression, shown), shown)

    async def kernel_id(self, shown: str) -> str | None:
        """The kernel of the notebook's Jupyter session, if it has one."""
        for entry in await self.serverapp.session_manager.list_sessions():
            kernel = entry.get("kernel") or {}
            if entry.get("path") == shown and kernel.get("id"):
                return str(kernel["id"])
        return None

    async def page_kernel(self, path: Path, shown: str) -> str | None:
        """The kernel of the notebook's session when a page (a websocket) is connected to it
        (this server has no collaboration: the endpoint asks only then)."""
        kernel_id = await self.kernel_id(shown)
        if kernel_id is None or self.connections(kernel_id) < 1:
            return None
        return kernel_id

    def connections(self, kernel_id: str) -> int:
        """How many websockets (open pages, consoles) the kernel has now."""
        try:
            model = self.serverapp.kernel_manager.kernel_model(kernel_id)
        except Exception:  # a kernel gone since (the manager raises its own HTTP 404)
            return 0
        return int(model.get("connections", 0) or 0)

    async def ask(
        self,
        kernel_id: str,
        expression: str,
        shown: str,
        seconds: float = ANSWER_SECONDS,
        when_busy: Callable[[str], KernelUnreachable] = busy,
        when_died: Callable[[str], KernelUnreachable] = died,
    ) -> dict[str, Any]:
        """The execute_reply content of planbook's silent ``expression``; KernelUnreachable
        when the kernel does not answer within ``seconds`` (``when_busy`` says it) or stops
        meanwhile (``when_died``)."""
        # heavy: jupyter_client (the server has it; planbook's own floors never need it)
        from jupyter_client.asynchronous.client import AsyncKernelClient

        try:
            manager = self.serverapp.kernel_manager.get_kernel(kernel_id)
        except KeyError:
            raise no_kernel(shown) from None
        # a restart replaces the kernel's process and its provisioner: what was sent is lost
        process = _process(manager)
        client = AsyncKernelClient()
        client.load_connection_info(manager.get_connection_info())
        client.start_channels(shell=True, iopub=False, stdin=False, hb=False, control=False)
        try:
            msg_id = client.execute(**execute_content(expression))
            deadline = time.monotonic() + seconds
            while (left := deadline - time.monotonic()) > 0:
                try:
                    reply: dict[str, Any] = await client.get_shell_msg(
                        timeout=min(left, ALIVE_SECONDS)
                    )
                except (TimeoutError, queue.Empty):
                    if _process(manager) is not process or not await _alive(manager):
                        raise when_died(shown) from None
                    continue
                if reply.get("parent_header", {}).get("msg_id") == msg_id:
                    content: dict[str, Any] = reply.get("content") or {}
                    return content
        finally:
            client.stop_channels()
        raise when_busy(shown)


def _process(manager: Any) -> object:
    """The kernel's process as its manager's provisioner holds it (a new one after a restart;
    None once stopped)."""
    return getattr(getattr(manager, "provisioner", None), "process", None)


async def _alive(manager: Any) -> bool:
    """The kernel manager's ``is_alive`` (awaitable on the server's async managers)."""
    alive = manager.is_alive()
    if inspect.isawaitable(alive):
        alive = await alive
    return bool(alive)
