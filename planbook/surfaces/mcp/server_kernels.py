"""The kernels of the Jupyter server the MCP endpoint lives in: a notebook's kernel is the one
of its session in the server's session manager, asked through the server's kernel manager
(a kernel client of its own, on the server's event loop; no websocket, no token needed)."""

from __future__ import annotations

import queue
import time
from pathlib import Path
from typing import Any

from planbook.sessions.served_kernels import (
    ANSWER_SECONDS,
    answer_of,
    busy,
    execute_content,
    no_kernel,
)


class ServerKernels:
    """``KernelReach`` over the server's own session and kernel managers."""

    def __init__(self, serverapp: Any) -> None:
        self.serverapp = serverapp

    async def evaluate(self, path: Path, shown: str, expression: str) -> str:
        kernel_id = await self._kernel_id(shown)
        if kernel_id is None:
            raise no_kernel(shown)
        return answer_of(await self._ask(kernel_id, expression, shown), shown)

    async def _kernel_id(self, shown: str) -> str | None:
        for entry in await self.serverapp.session_manager.list_sessions():
            kernel = entry.get("kernel") or {}
            if entry.get("path") == shown and kernel.get("id"):
                return str(kernel["id"])
        return None

    async def _ask(self, kernel_id: str, expression: str, shown: str) -> dict[str, Any]:
        # heavy: jupyter_client (the server has it; planbook's own floors never need it)
        from jupyter_client.asynchronous.client import AsyncKernelClient

        try:
            manager = self.serverapp.kernel_manager.get_kernel(kernel_id)
        except KeyError:
            raise no_kernel(shown) from None
        client = AsyncKernelClient()
        client.load_connection_info(manager.get_connection_info())
        client.start_channels(shell=True, iopub=False, stdin=False, hb=False, control=False)
        try:
            msg_id = client.execute(**execute_content(expression))
            deadline = time.monotonic() + ANSWER_SECONDS
            while (left := deadline - time.monotonic()) > 0:
                try:
                    reply: dict[str, Any] = await client.get_shell_msg(timeout=left)
                except (TimeoutError, queue.Empty):
                    break
                if reply.get("parent_header", {}).get("msg_id") == msg_id:
                    content: dict[str, Any] = reply.get("content") or {}
                    return content
        finally:
            client.stop_channels()
        raise busy(shown)
