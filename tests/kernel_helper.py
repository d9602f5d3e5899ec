"""A real IPython kernel for tests, started with jupyter_client, driven cell by cell."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_client.manager import KernelManager

#: A front end's ``stop_on_error`` asks the kernel to abort the requests queued behind a failing
#: one. ipykernel 7 sends the failing request's reply before it marks the end of that abort, so
#: a request sent the moment the reply arrives is sometimes aborted as well (49 times in 300 on
#: this machine: status "aborted", no output at all; CI failed on it once). Tests send one
#: request at a time and what they ask after a failure must run: every request here says False.
STOP_ON_ERROR = False


def execute_content(code: str) -> dict[str, Any]:
    """The content of an execute request as a test sends it (see STOP_ON_ERROR)."""
    return {
        "code": code,
        "silent": False,
        "store_history": True,
        "user_expressions": {},
        "allow_stdin": False,
        "stop_on_error": STOP_ON_ERROR,
    }


@dataclass
class Reply:
    status: str
    stdout: str = ""
    stderr: str = ""
    outputs: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""

    @property
    def text(self) -> str:
        return self.stdout + self.stderr + self.error

    def take(self, msg: dict[str, Any]) -> None:
        """An output message of the request: its text or its output kept."""
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream":
            if content["name"] == "stdout":
                self.stdout += content["text"]
            else:
                self.stderr += content["text"]
        elif kind in ("display_data", "execute_result"):
            self.outputs.append(content)
        elif kind == "error":
            self.error += f"{content['ename']}: {content['evalue']}"

    def finished(self, status: str, code: str) -> Reply:
        if status == "aborted":  # it never ran: no output to assert on, say so
            raise AssertionError(f"the kernel aborted {code!r} (a request before it failed)")
        self.status = status
        return self


class Kernel:
    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.km = KernelManager(kernel_name="python3")
        self.km.kernel_spec.argv[0] = sys.executable  # the kernel uses this venv's python
        self.km.start_kernel(cwd=str(cwd), env={**os.environ, **env})
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)

    def run(self, code: str, timeout: float = 120) -> Reply:
        reply = Reply(status="")
        msg = self.kc.execute_interactive(
            code, timeout=timeout, output_hook=reply.take, stop_on_error=STOP_ON_ERROR
        )
        return reply.finished(msg["content"]["status"], code)

    def run_in_cell(self, code: str, cell_id: str | None) -> Reply:
        """``code`` sent as JupyterLab sends a cell: the running cell's id in the request's
        metadata (none: as a console sends it). Its outputs, once the kernel is idle again."""
        metadata = {"cellId": cell_id} if cell_id is not None else {}
        msg = self.kc.session.msg("execute_request", execute_content(code), metadata=metadata)
        self.kc.shell_channel.send(msg)
        mine = msg["header"]["msg_id"]
        reply = Reply(status="")
        while True:
            out = self.kc.get_iopub_msg(timeout=60)
            if out["parent_header"].get("msg_id") != mine:
                continue
            if out["msg_type"] == "status" and out["content"]["execution_state"] == "idle":
                break
            reply.take(out)
        answer = self.kc.get_shell_msg(timeout=60)
        while answer["parent_header"].get("msg_id") != mine:
            answer = self.kc.get_shell_msg(timeout=60)
        return reply.finished(answer["content"]["status"], code)

    def restart(self) -> None:
        self.km.restart_kernel(now=True)
        self.kc.wait_for_ready(timeout=60)

    def stop(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


@contextmanager
def kernel(cwd: Path, **env: str) -> Iterator[Kernel]:
    k = Kernel(cwd, env)
    try:
        yield k
    finally:
        k.stop()
