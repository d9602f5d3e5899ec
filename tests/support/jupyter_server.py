"""Start a real Jupyter server (JupyterLab, with or without real-time collaboration) for tests.

Everything the server reads or writes lives in a temp folder: JUPYTER_CONFIG_DIR, DATA_DIR,
RUNTIME_DIR, IPYTHONDIR and the lab user settings, so the user's own Jupyter state is never
touched. The server runs with the temp root as its working directory because the
collaboration store writes ``.jupyter_ystore.db`` in the cwd.

    with start_jupyter(tmp_path / "root") as server:
        session = server.create_session("notebook.ipynb")
        server.execute(session["kernel"]["id"], "print(1)")
"""

from __future__ import annotations

import contextlib
import http.client
import json
import json as _json  # ``api`` takes a parameter named json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from tests.kernel_helper import execute_content

#: Lab settings written into the temp user-settings dir: no news toast, no update checks
#: (the machine has no internet, and the toast covers the page in browser tests).
LAB_SETTINGS: dict[str, dict[str, Any]] = {
    "@jupyterlab/apputils-extension/notification": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
}

#: Lab extensions of jupyter-collaboration, disabled in the page when collaboration is off.
COLLABORATION_LAB_EXTENSIONS = (
    "@jupyter/collaboration-extension",
    "@jupyter/docprovider-extension",
)


#: The flag that switches jupyter-collaboration off while it stays installed (its endpoints
#: still answer; the pages edit their own model and join no room).
RTC_OFF = "--YDocExtension.disable_rtc=True"


#: ``python -m APP ARGS`` run as ``python -c BOOT APP ARGS``, the same server with two
#: differences that only tests need:
#: - the optional modules planbook's own processes go without are marked missing first
#:   (``as_a_program``, planbook/surfaces/program.py): jupyter-events imports jsonschema, and
#:   its rfc3987_syntax builds parsers for two string formats no Jupyter schema uses, 2.4 s of
#:   CPU per start on the CI machine, some sixty starts in the suite;
#: - the server exits once the test process that started it is gone. It runs in a session of
#:   its own (``start``), so a test run killed from outside (a timeout, a cancelled CI job)
#:   left it running; one whose collaboration had broken kept a core busy for an hour. Its
#:   kernels follow it (ipykernel exits when its parent does).
BOOT = """\
import os, runpy, sys, threading, time
from planbook.surfaces.program import as_a_program
as_a_program()
def exit_when_orphaned(parent=os.getppid()):
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(70)
threading.Thread(target=exit_when_orphaned, daemon=True).start()
app = sys.argv.pop(1)
sys.argv[0] = app
runpy.run_module(app, run_name="__main__", alter_sys=True)
"""


class JupyterServerError(RuntimeError):
    """The test server did not start, or a REST call failed."""


class PortTaken(JupyterServerError):
    """Another process took the server's port between ``free_port`` and the server's bind:
    the server said so and exited, or a socket that is not HTTP answered there (a kernel's
    ZeroMQ port, started by another test at that moment, greets with b"\\xff...")."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _descendants(pid: int) -> set[int]:
    """All live descendants of ``pid`` (kernels run in their own session, so killing the
    server's process group does not reach them)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # the command name may contain spaces and parentheses: split after the last ')'
        fields = stat[stat.rfind(")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is as good as dead
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return False


def _isolated_env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("config", "data", "runtime", "ipython", "settings", "workspaces"):
        (home / name).mkdir(parents=True, exist_ok=True)
    env.update(
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_DATA_DIR=str(home / "data"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        IPYTHONDIR=str(home / "ipython"),
        JUPYTERLAB_SETTINGS_DIR=str(home / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
        JUPYTER_PLATFORM_DIRS="1",
        PYTHONUNBUFFERED="1",
        # the temp dirs above before the venv's share/jupyter (in a venv jupyter_core puts
        # the environment first): the in-cell review linked into JUPYTER_DATA_DIR is the one
        # under test, never one installed in the venv from another checkout
        JUPYTER_PREFER_ENV_PATH="0",
    )
    # a kernel started by this server must never think it runs under some outer server
    for name in (
        "JPY_SESSION_NAME",
        "JPY_PARENT_PID",
        "PLANBOOK_SERVER_URL",
        "PLANBOOK_SERVER_TOKEN",
    ):
        env.pop(name, None)
    env.pop("JUPYTER_PATH", None)
    for plugin, values in LAB_SETTINGS.items():
        path = home / "settings" / (plugin + ".jupyterlab-settings")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    # a python3 kernelspec that runs this interpreter (the venv), whatever PATH says
    spec = home / "data" / "kernels" / "python3"
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "Python 3 (ipykernel)",
                "language": "python",
                "metadata": {"debugger": True},
            }
        )
    )
    return env


#: The servers of this test process that are running now (``started_servers``).
_RUNNING: dict[int, RunningServer] = {}


def started_servers() -> list[RunningServer]:
    """The servers this test process has running now, for a failed test's report."""
    return list(_RUNNING.values())


class RunningServer:
    """A Jupyter server process; stop it with ``stop()`` or use it as a context manager."""

    def __init__(
        self,
        root: Path,
        *,
        lab: bool = True,
        collaboration: bool = True,
        extra_args: Sequence[str] = (),
        home: Path | None = None,
    ) -> None:
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self.lab = lab
        self.collaboration = collaboration
        self.extra_args = list(extra_args)
        self._own_home = home is None
        self.home = Path(home) if home else Path(tempfile.mkdtemp(prefix="planbook-jupyter-"))
        self.env = _isolated_env(self.home)
        self.token = uuid.uuid4().hex
        self.new_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = self.home / "server.log"
        self._children: set[int] = set()
        self._started = 0.0  # time.monotonic() at the last start
        if not collaboration:
            page_config = self.home / "config" / "labconfig" / "page_config.json"
            page_config.parent.mkdir(parents=True, exist_ok=True)
            page_config.write_text(
                json.dumps(
                    {"disabledExtensions": {name: True for name in COLLABORATION_LAB_EXTENSIONS}}
                )
            )

    # -- process ---------------------------------------------------------------------------

    def new_port(self) -> None:
        """Take a port free now (before the first start, or after one was taken)."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"

    def command(self) -> list[str]:
        app = "jupyterlab" if self.lab else "jupyter_server"
        args = [
            sys.executable,
            "-c",
            BOOT,
            app,
            "--no-browser",
            "--allow-root",
            "--ip=127.0.0.1",
            f"--port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.root}",
            "--ServerApp.open_browser=False",
            # jupyter-collaboration saves a changed room after this delay (seconds)
            "--YDocExtension.document_save_delay=0.5",
        ]
        if not self.collaboration:
            # without the server extension there is no /api/collaboration: like a server
            # where jupyter-collaboration is not installed
            args.append('--ServerApp.jpserver_extensions={"jupyter_server_ydoc": False}')
        return args + self.extra_args

    def start(self) -> Self:
        if self.proc is not None and self.proc.poll() is None:
            raise JupyterServerError("server already running")
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            self.command(),
            cwd=self.root,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        self._started = time.monotonic()
        _RUNNING[id(self)] = self
        self.wait_ready()
        return self

    def state(self) -> str:
        """Where the server stands, for a failed test's report: its port and process, how
        long it has run and how much CPU it took (a server busy with something else answers
        nobody), and the end of its log."""
        proc = self.proc
        if proc is None:
            return f"port {self.port}: not running"
        ran = time.monotonic() - self._started
        try:
            fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            cpu = f"{(int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK'):.1f} s"
        except (OSError, IndexError, ValueError):
            cpu = "unknown"
        alive = "running" if proc.poll() is None else f"exited ({proc.returncode})"
        return (
            f"port {self.port}, pid {proc.pid} {alive}, up {ran:.1f} s, CPU {cpu}\n"
            f"--- the end of its log ---\n{self.log()[-3000:]}"
        )

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                log = self.log()
                if f"port {self.port} is already in use" in log:
                    raise PortTaken(f"port {self.port} was taken:\n{log}")
                raise JupyterServerError(f"server exited during start:\n{log}")
            try:
                self.api("GET", "api/status")
                return
            except http.client.HTTPException as exc:
                raise PortTaken(f"port {self.port} answers, but not as HTTP ({exc!r})") from None
            except (OSError, JupyterServerError):
                time.sleep(0.2)
        raise JupyterServerError(f"server not ready after {timeout} s:\n{self.log()}")

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-6000:]
        except OSError:
            return ""

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def stop(self, timeout: float = 5.0) -> None:
        """Shut the server down (kernels included): SIGTERM to its process group, SIGKILL
        after ``timeout``, then kill any kernel that outlived it. With a client in a room the
        SIGKILL always comes: jupyter-server-ydoc 3.0 never finishes deleting its rooms
        (jupyter-collaboration#161, #503; #546 is unreleased), so a stop is a kill ``timeout``
        seconds later, and may cut a save short as a kill does (``read_after_restart`` in
        tests/live/conftest.py)."""
        proc = self.proc
        if proc is None:
            return
        self.proc = None
        _RUNNING.pop(id(self), None)
        children = _descendants(proc.pid) | self._children
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(30)  # reaped at once unless the machine is very busy (CI)
        deadline = time.monotonic() + 5
        while children and time.monotonic() < deadline:
            children = {pid for pid in children if _alive(pid)}
            time.sleep(0.1)
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def kill(self) -> None:
        """SIGKILL the server alone (a crash): its kernels survive until ``stop()``."""
        proc = self.proc
        if proc is None:
            return
        self._children |= _descendants(proc.pid)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
        self.proc = None
        _RUNNING.pop(id(self), None)

    def restart(self, *, crash: bool = False) -> None:
        """Stop (or ``crash``: SIGKILL) and start again on the same port, root and state."""
        if crash:
            self.kill()
        else:
            self.stop()
        self.start()

    def close(self) -> None:
        self.stop()
        if self._own_home:
            import shutil

            shutil.rmtree(self.home, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- REST ------------------------------------------------------------------------------

    def api(self, method: str, path: str, json: Any = None, *, timeout: float = 30.0) -> Any:
        """Call the REST API with the token; ``json`` is the body; returns the decoded JSON
        (None if empty)."""
        url = urllib.parse.urljoin(self.url, path.lstrip("/"))
        data = None if json is None else _json.dumps(json).encode()
        request = urllib.request.Request(url, data=data, method=method.upper())
        request.add_header("Authorization", f"token {self.token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                body = response.read()
        except urllib.error.HTTPError as e:
            detail = e.read().decode(errors="replace")[:500]
            raise JupyterServerError(f"{method} {path}: HTTP {e.code}: {detail}") from None
        return _json.loads(body) if body else None

    def ws_url(self, path: str) -> str:
        base = self.url.replace("http://", "ws://", 1)
        sep = "&" if "?" in path else "?"
        return f"{base}{path.lstrip('/')}{sep}token={self.token}"

    def write_notebook(
        self, name: str, cells: Sequence[str] = (), *, ids: Sequence[str] = ()
    ) -> Path:
        """Write a small notebook (code cells with these sources; with ``ids``, these cell
        ids, else random ones) into the root."""
        nb = {
            "nbformat": 4,
            "nbformat_minor": 5,
            "metadata": {
                "kernelspec": {
                    "name": "python3",
                    "display_name": "Python 3 (ipykernel)",
                    "language": "python",
                },
                "language_info": {"name": "python"},
            },
            "cells": [
                {
                    "id": cell_id,
                    "cell_type": "code",
                    "source": src,
                    "metadata": {},
                    "outputs": [],
                    "execution_count": None,
                }
                for src, cell_id in zip(
                    cells, ids or [uuid.uuid4().hex[:8] for _ in cells], strict=True
                )
            ],
        }
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(nb, indent=1))
        return path

    def end_sessions(self) -> None:
        """Shut down every kernel session (2 cores are shared); a kernel still restarting
        may refuse: it is left to the server's own shutdown."""
        for session in self.api("GET", "api/sessions"):
            with contextlib.suppress(JupyterServerError):
                self.api("DELETE", f"api/sessions/{session['id']}")

    def create_session(self, nb_path: str | Path) -> dict[str, Any]:
        """POST /api/sessions for this notebook with a python3 kernel (as the frontend does)."""
        rel = Path(nb_path)
        if rel.is_absolute():
            rel = rel.relative_to(self.root)
        body = {
            "path": rel.as_posix(),
            "name": rel.name,
            "type": "notebook",
            "kernel": {"name": "python3"},
        }
        session: dict[str, Any] = self.api("POST", "api/sessions", body)
        return session

    def execute(self, kernel_id: str, code: str, *, timeout: float = 60.0) -> dict[str, Any]:
        """Run ``code`` in a kernel over its websocket; returns {"stdout", "stderr", "error",
        "status", "outputs"} (raises if the kernel does not answer in time)."""
        import websocket  # websocket-client, a dependency of jupyter_server

        ws = websocket.create_connection(
            self.ws_url(f"api/kernels/{kernel_id}/channels"),
            timeout=timeout,
        )
        try:
            msg_id = uuid.uuid4().hex
            ws.send(
                json.dumps(
                    {
                        "header": {
                            "msg_id": msg_id,
                            "username": "test",
                            "session": uuid.uuid4().hex,
                            "msg_type": "execute_request",
                            "version": "5.3",
                        },
                        "parent_header": {},
                        "metadata": {},
                        "channel": "shell",
                        "buffers": [],
                        "content": execute_content(code),
                    }
                )
            )
            result: dict[str, Any] = {
                "stdout": "",
                "stderr": "",
                "error": None,
                "status": None,
                "outputs": [],
            }
            idle = replied = False
            deadline = time.monotonic() + timeout
            while not (idle and replied):
                if time.monotonic() > deadline:
                    raise JupyterServerError(f"kernel {kernel_id} did not finish: {code!r}")
                msg = json.loads(ws.recv())
                if msg.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                kind = msg["msg_type"]
                content = msg["content"]
                if kind == "stream":
                    result[content["name"]] += content["text"]
                    result["outputs"].append(content)
                elif kind in ("execute_result", "display_data"):
                    result["outputs"].append(content)
                elif kind == "error":
                    result["error"] = content
                elif kind == "status" and content["execution_state"] == "idle":
                    idle = True
                elif kind == "execute_reply":
                    result["status"] = content["status"]
                    replied = True
            return result
        finally:
            ws.close()


def start_jupyter(
    root: Path,
    *,
    lab: bool = True,
    collaboration: bool = True,
    extra_args: Sequence[str] = (),
) -> RunningServer:
    """Start a server in ``root`` and wait until it answers; use ``with`` or call ``close()``."""
    server = RunningServer(root, lab=lab, collaboration=collaboration, extra_args=extra_args)
    try:
        for _ in range(2):  # a port taken at the last moment: start again on another
            try:
                return server.start()
            except PortTaken:
                server.stop()
                server.new_port()
        return server.start()
    except BaseException:
        server.close()
        raise
