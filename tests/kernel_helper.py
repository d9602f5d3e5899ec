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

        def on_output(msg: dict[str, Any]) -> None:
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                if content["name"] == "stdout":
                    reply.stdout += content["text"]
                else:
                    reply.stderr += content["text"]
            elif kind in ("display_data", "execute_result"):
                reply.outputs.append(content)
            elif kind == "error":
                reply.error += f"{content['ename']}: {content['evalue']}"

        msg = self.kc.execute_interactive(code, timeout=timeout, output_hook=on_output)
        reply.status = msg["content"]["status"]
        return reply

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
