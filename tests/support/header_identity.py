"""A JupyterHub-style identity provider for the tests: the server has no token; a request is
someone's when it carries the header a proxy in front of the server would set (``X-Test-User``,
with a name the provider knows), and nobody's otherwise."""

from __future__ import annotations

from jupyter_server.auth.identity import IdentityProvider, User
from tornado import web

#: The header the provider reads, and the people it knows.
HEADER = "X-Test-User"
KNOWN = frozenset({"ada", "grace"})


class HeaderIdentity(IdentityProvider):
    """Who asks is the known name in ``X-Test-User``; no token, no login page."""

    @property
    def auth_enabled(self) -> bool:
        return True

    def get_user(self, handler: web.RequestHandler) -> User | None:
        name = handler.request.headers.get(HEADER, "")
        return User(username=name) if name in KNOWN else None

    def is_token_authenticated(self, handler: web.RequestHandler) -> bool:
        """A header no browser sends across sites, like a token: no XSRF cookie needed."""
        return self.get_user(handler) is not None

    def validate_security(self, app: object, ssl_options: object = None) -> None:
        """No token on purpose: the header is the authentication."""
