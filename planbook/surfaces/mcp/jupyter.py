"""planbook's Jupyter server extension: the MCP tools of the stdio server, served over
streamable HTTP at ``<base_url>/planbook/mcp`` inside a running Jupyter server, behind the
server's own authentication (its token or identity provider) and authorizer. The workspace is
the server's root folder; with jupyter-collaboration, notebooks are read and edited through
their collaboration rooms, so a step an agent proposes shows in the open page at once; without
it, through the kernel of a notebook's open page (kernel_staging.py), for the same reason.

Enabled by ``etc/jupyter/jupyter_server_config.d/planbook.json``, which the wheel installs
(``jpserver_extensions: {"planbook": true}``); ``planbook._jupyter_server_extension_points``
names this module, only when the ``mcp`` extra is installed (else the server starts without
the endpoint and its log says why in one line).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jupyter_server.utils import url_path_join
from mcp.server.transport_security import TransportSecuritySettings

from planbook.sessions.served_rooms import ServerRoute
from planbook.surfaces.mcp.http_bridge import MAX_BODY_BYTES, MCPHandler, SessionManagerTask
from planbook.surfaces.mcp.kernel_staging import KernelStaging
from planbook.surfaces.mcp.server import build_server
from planbook.surfaces.mcp.server_kernels import ServerKernels
from planbook.surfaces.mcp.server_target import ServerTarget

#: Where the endpoint answers, under the server's base URL.
PATH = "planbook/mcp"
#: The server extension of jupyter-collaboration, whose rooms proposals go through.
COLLABORATION = "jupyter_server_ydoc"


def route_of(serverapp: Any) -> ServerRoute:
    """How this server's own rooms are reached: its connection URL and token, and whether
    jupyter-collaboration is on: enabled, and not switched off by
    ``--YDocExtension.disable_rtc=True`` (its endpoints still answer then, but the pages edit
    their own plain model and never join a room)."""
    package = serverapp.extension_manager.extensions.get(COLLABORATION)
    url = str(serverapp.connection_url)
    enabled = bool(package is not None and package.enabled)
    return ServerRoute(
        url=url if url.endswith("/") else url + "/",
        token=str(getattr(serverapp.identity_provider, "token", "") or ""),
        collaboration=enabled and not rtc_disabled(serverapp, package),
    )


def rtc_disabled(serverapp: Any, package: Any) -> bool:
    """``YDocExtension.disable_rtc``, as the collaboration extension read it (else as the
    server's configuration says it)."""
    for point in getattr(package, "extension_points", {}).values():
        app = getattr(point, "app", None)
        if app is not None and hasattr(app, "disable_rtc"):
            return bool(app.disable_rtc)
    return bool(serverapp.config.get("YDocExtension", {}).get("disable_rtc", False))


def _load_jupyter_server_extension(serverapp: Any) -> None:
    route = route_of(serverapp)
    target = ServerTarget(Path(serverapp.root_dir), route)
    kernels = ServerKernels(serverapp)
    if not route.collaboration:  # the open page holds the notebook: its kernel stages into it
        target.pages = KernelStaging(kernels, target.root)
    server = build_server(target, kernels, pages=target.pages)
    path = url_path_join(serverapp.base_url, PATH)
    # Jupyter checks the host, the origin and who asks before the SDK sees a request: the
    # SDK's own DNS-rebinding check would only repeat the first two.
    server.streamable_http_app(
        streamable_http_path=path,
        max_request_body_size=MAX_BODY_BYTES,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    running = SessionManagerTask(server.session_manager)
    serverapp.web_app.add_handlers(
        ".*$", [(path, MCPHandler, {"manager": running, "let_in": target.let_in})]
    )
    serverapp.log.info(
        "planbook: MCP endpoint at %s (%s)", url_path_join(route.url, PATH), target.describe()
    )
