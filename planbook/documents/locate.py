"""Which notebook this kernel belongs to, and which backend edits it.

Order: an explicit server (arguments, or ``PLANBOOK_SERVER_URL``/``PLANBOOK_SERVER_TOKEN``), else
the running Jupyter server whose pid is this kernel's parent, confirmed by this kernel's id in
its ``/api/sessions`` (which also gives the notebook's current path, unlike ``JPY_SESSION_NAME``
that goes stale after a rename); else the notebook a headless run executes (nbconvert,
papermill, ``PLANBOOK_NOTEBOOK``: documents/headless_run.py); else ``JPY_SESSION_NAME``. With
jupyter-collaboration on that server the notebook is edited live in its room; otherwise the
file, or memory, and ``description`` says why.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from planbook.documents.base import NotebookDocument
from planbook.documents.file import FileNotebook
from planbook.documents.headless import open_headless
from planbook.documents.headless_run import HeadlessRun, Unnamed, find_run
from planbook.documents.live.document import open_live
from planbook.documents.memory import MemoryNotebook
from planbook.documents.page import PageNotebook
from planbook.errors import LiveConnectionError

log = logging.getLogger("planbook.locate")

INSTALL_LIVE = "install planbook[live] (pip install 'planbook[live]') and restart Jupyter"
FIGHT_WARNING = "an open editor may overwrite kernel edits"
RTC_OFF = "collaboration is switched off on the server (YDocExtension.disable_rtc)"

Collaboration = Literal["on", "off", "none"]
#: The page settings JupyterLab and Notebook 7 embed in every page they serve.
_CONFIG_DATA = re.compile(
    r'<script id="jupyter-config-data" type="application/json">\s*(\{.*?\})\s*</script>', re.S
)


@dataclass(frozen=True)
class Located:
    document: NotebookDocument
    path: Path | None
    warnings: tuple[str, ...] = ()
    """One line each, for the session's warnings (said at load, in `%plan` and the panel)."""
    unsynced_page: bool = False
    """An editor page may hold this notebook and nothing brings planbook's changes into it
    (no collaboration, no extension): the person must save before and reload after."""


@dataclass(frozen=True)
class ServerInfo:
    """A Jupyter server this kernel can talk to."""

    url: str
    """Base URL, ending with a slash."""
    token: str
    root_dir: Path | None
    pid: int | None = None

    def api(self, method: str, path: str, body: Any = None, timeout: float = 5.0) -> Any:
        url = urllib.parse.urljoin(self.url, path)
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method)
        if self.token:
            request.add_header("Authorization", f"token {self.token}")
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
        return json.loads(raw) if raw else None

    def has_collaboration(self) -> bool:
        """jupyter-collaboration is installed AND switched on: its endpoints answer and the
        pages it serves do not run with ``--YDocExtension.disable_rtc=True``."""
        return self.collaboration() == "on"

    def collaboration(self) -> Collaboration:
        """ "on"; "off" (jupyter-collaboration answers, but the server was started with
        ``--YDocExtension.disable_rtc=True``: its pages edit their own plain model and never
        join a room); "none" (not installed, or its server extension is disabled)."""
        try:
            self.api("GET", "api/collaboration/session/planbook-probe.ipynb")
        except urllib.error.HTTPError as exc:
            # PUT only: a GET gets 405 when it is there, 404 when it is not
            if exc.code != 405:
                return "none"
        except OSError:
            return "none"
        return "off" if self.rtc_disabled() else "on"

    def rtc_disabled(self) -> bool:
        """The server's page settings say ``disableRTC`` (what the page itself reads: the
        package importing, or its endpoints answering, says nothing about it)."""
        config = self.page_config()
        return bool(config.get("disableRTC")) if config is not None else False

    def page_config(self) -> dict[str, Any] | None:
        """The ``jupyter-config-data`` a page of this server starts from (JupyterLab's
        ``lab``, else Notebook 7's ``tree``), or None when no page answers."""
        for page in ("lab", "tree"):
            url = urllib.parse.urljoin(self.url, page)
            request = urllib.request.Request(url)
            if self.token:
                request.add_header("Authorization", f"token {self.token}")
            try:
                with urllib.request.urlopen(request, timeout=5.0) as response:
                    html = response.read(2_000_000).decode("utf-8", "replace")
            except (OSError, ValueError):
                continue
            found = _CONFIG_DATA.search(html)
            if found is None:
                continue
            try:
                config = json.loads(found.group(1))
            except ValueError:
                continue
            if isinstance(config, dict):
                return config
        return None


def notebook_path_from_env() -> Path | None:
    name = os.environ.get("JPY_SESSION_NAME")
    if not name:
        return None
    path = Path(name)
    if path.suffix != ".ipynb":
        return None
    return path if path.is_absolute() else Path.cwd() / path


def kernel_id() -> str | None:
    """This kernel's id, from its connection file name (``kernel-<id>.json``)."""
    try:
        # heavy: ipykernel
        from ipykernel import get_connection_file

        name = Path(get_connection_file()).name
    except Exception:  # not in a kernel
        return None
    if name.startswith("kernel-") and name.endswith(".json"):
        return name[len("kernel-") : -len(".json")]
    return None


def running_servers() -> list[ServerInfo]:
    """The servers that wrote a ``jpserver-*.json`` in the runtime dir and still run. (Read
    here rather than with jupyter_server's list_running_servers: importing that takes 2 s.)"""
    try:
        # heavy: jupyter_core
        from jupyter_core.paths import jupyter_runtime_dir

        runtime = Path(jupyter_runtime_dir())
    except Exception:
        return []
    servers = []
    for file in sorted(runtime.glob("jpserver-*.json")):
        try:
            info = json.loads(file.read_text())
            pid = int(info["pid"])
            os.kill(pid, 0)
        except (OSError, ValueError, KeyError, TypeError):
            continue
        url = str(info.get("url", ""))
        if not url:
            continue
        root = info.get("root_dir") or info.get("notebook_dir")
        servers.append(
            ServerInfo(
                url=url if url.endswith("/") else url + "/",
                token=str(info.get("token", "")),
                root_dir=Path(root) if root else None,
                pid=pid,
            )
        )
    return servers


def session_path(server: ServerInfo, kid: str) -> str | None:
    """The notebook path (relative to the server root) of the session running kernel ``kid``."""
    try:
        sessions = server.api("GET", "api/sessions", timeout=2.0)
    except (OSError, ValueError):
        return None
    for entry in sessions or []:
        if (entry.get("kernel") or {}).get("id") == kid and entry.get("path"):
            return str(entry["path"])
    return None


def find_server(
    server_url: str | None = None, token: str | None = None
) -> tuple[ServerInfo, str | None] | None:
    """The server of this kernel and, when confirmed by kernel id, the notebook path on it."""
    kid = kernel_id()
    url = server_url or os.environ.get("PLANBOOK_SERVER_URL")
    if url:
        tok = token if token is not None else os.environ.get("PLANBOOK_SERVER_TOKEN", "")
        server = ServerInfo(url if url.endswith("/") else url + "/", tok, None)
        root = _root_dir(server)
        server = ServerInfo(server.url, server.token, root)
        return server, session_path(server, kid) if kid else None
    parent = os.environ.get("JPY_PARENT_PID") or str(os.getppid())
    servers = running_servers()
    # the parent first; then any other server (a kernel started through a provisioner)
    servers.sort(key=lambda s: str(s.pid) != parent)
    for server in servers:
        path = session_path(server, kid) if kid else None
        if path is not None:
            return server, path
    for server in servers:
        if str(server.pid) == parent:
            return server, None
    return None


def _root_dir(server: ServerInfo) -> Path | None:
    root = os.environ.get("PLANBOOK_SERVER_ROOT")
    if root:
        return Path(root)
    for known in running_servers():
        if known.url.rstrip("/") == server.url.rstrip("/"):
            return known.root_dir
    return None


def find_on_server(server: ServerInfo, path: Path) -> str | None:
    """The path of a local notebook on a server whose root is unknown (a server given by URL):
    the shortest trailing part of the path that the server has, with the same size."""
    try:
        size = path.stat().st_size
    except OSError:
        return None
    parts = path.resolve().parts
    for k in range(1, len(parts)):
        rel = "/".join(parts[-k:])
        try:
            model = server.api("GET", f"api/contents/{urllib.parse.quote(rel)}?content=0")
        except (OSError, ValueError):
            continue
        if model and model.get("type") == "notebook" and model.get("size") == size:
            return rel
    return None


def _relative(path: Path, root: Path | None) -> str | None:
    if root is None:
        return None
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None


def live_available() -> str | None:
    """None when the live backend's libraries import, else what is missing."""
    missing = []
    for module in ("pycrdt", "jupyter_ydoc", "websocket"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    return ", ".join(missing) or None


def open_document(
    notebook: str | os.PathLike[str] | None = None,
    *,
    server_url: str | None = None,
    token: str | None = None,
    live: bool | None = None,
    user_ns: dict[str, Any] | None = None,
) -> Located:
    """Pick the backend for ``notebook`` (default: the one this kernel belongs to).

    ``live=False`` never opens a collaboration room; ``live=True`` raises if it cannot.
    """
    explicit = Path(notebook).resolve() if notebook is not None else None
    found = find_server(server_url, token) if live is not False else None
    server, rel = found if found else (None, None)
    path: Path | None = explicit
    why = "given explicitly"
    if path is None and server is not None and rel is not None and server.root_dir is not None:
        path = (server.root_dir / rel).resolve()
        why = "this kernel's session on the server"
    unnamed = None
    if path is None or (explicit is not None and server is None):
        # before JPY_SESSION_NAME: a run started from a notebook's cell inherits that name
        headless = _headless(user_ns, explicit)
        if isinstance(headless, Located):
            return headless
        unnamed = headless
    if path is None and unnamed is None:
        path = notebook_path_from_env()
        why = "from JPY_SESSION_NAME"
    if path is None:
        vsc = _vscode_path(user_ns)
        if vsc is not None:
            return Located(
                FileNotebook(
                    vsc,
                    description=(
                        f"file: {vsc.name} (VS Code has no live route: planbook saves the file; "
                        "VS Code reloads it only while its copy has no unsaved changes)"
                    ),
                ),
                vsc,
            )
    if path is None:
        if unnamed is not None:
            description = f"memory: {unnamed}; until then changes stay in this kernel"
        else:
            where = (
                "Colab keeps the notebook out of the kernel's reach"
                if _in_colab()
                else ("JPY_SESSION_NAME is not set and no path was given")
            )
            description = (
                f"memory: no notebook found ({where}); changes stay in this kernel. "
                "Use planbook.session(notebook='x.ipynb') to edit a file (headless runs: "
                "PLANBOOK_NOTEBOOK=x.ipynb)"
            )
        return Located(MemoryNotebook(description=description), None)

    reason = _live_reason(server, path, rel if explicit is None else None, live)
    if reason is None:
        assert server is not None
        room = _relative(path, server.root_dir) if explicit is not None else rel
        room = room or _relative(path, server.root_dir) or find_on_server(server, path)
        assert room is not None
        try:
            doc = open_live(
                server.url,
                server.token,
                room,
                description=(
                    f"live: {room} in the JupyterLab collaboration room on {server.url} "
                    f"({why}; changes appear in the open page, the server saves the file)"
                ),
            )
            return Located(doc, path)
        except LiveConnectionError as exc:
            if live:
                raise
            reason = f"the collaboration room did not open: {exc}"
    page = None if live else page_document(server, path, why)
    if page is not None:
        return Located(page, path)
    if live and reason:
        raise LiveConnectionError(f"cannot edit {path.name} live: {reason}")
    description = f"file: {path.name} ({why})"
    if reason:
        description = f"file: {path.name} ({why}; {reason})"
    return Located(
        FileNotebook(path, description=description),
        path,
        unsynced_page=reason is not None and FIGHT_WARNING in reason,
    )


def _headless(user_ns: dict[str, Any] | None, explicit: Path | None) -> Located | str | None:
    """A headless run's notebook (documents/headless.py): the document for it, or one line
    saying how to name it when the run's notebook is unclear, or None (not a headless run).
    A notebook given explicitly is that run's document only when it is the run's notebook
    (so a run that overwrites it still refuses to save)."""
    run = find_run(_namespace(user_ns))
    if explicit is not None:
        if not isinstance(run, HeadlessRun) or run.notebook != explicit:
            return None
    elif run is None:
        return None
    if isinstance(run, Unnamed):
        return run.reason
    warnings = (run.overwrite_warning(),) if run.overwrites else ()
    return Located(open_headless(run), run.notebook, warnings=warnings)


def _namespace(user_ns: dict[str, Any] | None) -> dict[str, Any] | None:
    if user_ns is not None:
        return user_ns
    try:
        # heavy: IPython
        from IPython import get_ipython

        shell = get_ipython()
    except Exception:
        return None
    return shell.user_ns if shell is not None else None


def _live_reason(
    server: ServerInfo | None, path: Path, rel: str | None, live: bool | None
) -> str | None:
    """None when the live backend can be used, else why not (one clause for description)."""
    if live is False:
        return "live editing turned off"
    if server is None:
        if os.environ.get("JPY_SESSION_NAME"):
            return f"no Jupyter server found for this kernel: {FIGHT_WARNING}"
        return "no Jupyter server: headless run"
    if (
        rel is None
        and _relative(path, server.root_dir) is None
        and (server.root_dir is not None or find_on_server(server, path) is None)
    ):
        return f"the notebook is not one the server {server.url} serves"
    collaboration = server.collaboration()
    if collaboration == "off":
        return f"{RTC_OFF}: {FIGHT_WARNING}"
    if collaboration == "none":
        return f"no collaboration on the server: {FIGHT_WARNING}; {INSTALL_LIVE}"
    missing = live_available()
    if missing:
        return (
            f"the server has collaboration but this kernel lacks {missing}: {FIGHT_WARNING}; "
            f"{INSTALL_LIVE}"
        )
    return None


def page_document(server: ServerInfo | None, path: Path, why: str) -> NotebookDocument | None:
    """The open page as the notebook (documents/page.py) when it is where the notebook lives:
    this kernel belongs to a Jupyter server without collaboration, whose pages load planbook's
    extension (installed where the server looks, not disabled), and the kernel has a comm to
    reach them. None otherwise (the file then, or the live room)."""
    if server is None or not _has_comm() or not labextension_enabled():
        return None
    collaboration = server.collaboration()
    if collaboration == "on":
        return None
    without = RTC_OFF if collaboration == "off" else f"no collaboration on {server.url}"
    return PageNotebook.from_file(
        path,
        description=(
            f"page: {path.name} in its open JupyterLab page ({why}; {without}: approved "
            "changes are applied in the page; saving the page saves them)"
        ),
    )


def _has_comm() -> bool:
    try:
        # heavy: ipykernel
        from ipykernel.kernelbase import Kernel
    except ImportError:
        return False
    return bool(Kernel.initialized())


def labextension_enabled(name: str = "planbook") -> bool:
    """planbook's JupyterLab extension is installed where the server looks for prebuilt
    extensions, and no page_config.json disables it."""
    try:
        # heavy: jupyter_core
        from jupyter_core.paths import jupyter_config_path, jupyter_path
    except ImportError:
        return False
    if not any((Path(d) / name / "package.json").is_file() for d in jupyter_path("labextensions")):
        return False
    for folder in jupyter_config_path():
        config = Path(folder) / "labconfig" / "page_config.json"
        try:
            disabled = json.loads(config.read_text()).get("disabledExtensions") or {}
        except (OSError, ValueError, AttributeError):
            continue
        if (isinstance(disabled, dict) and disabled.get(name)) or (
            isinstance(disabled, list) and name in disabled
        ):
            return False
    return True


def _vscode_path(user_ns: dict[str, Any] | None) -> Path | None:
    ns = user_ns
    if ns is None:
        try:
            # heavy: IPython
            from IPython import get_ipython

            shell = get_ipython()
            ns = shell.user_ns if shell is not None else None
        except Exception:
            ns = None
    value = (ns or {}).get("__vsc_ipynb_file__")
    return Path(value) if isinstance(value, str) and value.endswith(".ipynb") else None


def _in_colab() -> bool:
    return "google.colab" in sys.modules
