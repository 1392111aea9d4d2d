"""Who may talk to the window: the browser that opened the token link, on the bound address.

A page that can apply proposals and roll memories back must not be reachable by another web
page the person has open, nor by another user of the machine:

* the server binds the loopback address unless ``--host`` says otherwise;
* a random token travels in the first URL only; the first request with it gets an HttpOnly,
  SameSite=Strict cookie (as Jupyter does) and is redirected to the same page without it;
  every other request without that cookie gets 403;
* the ``Host`` header must name the bound address (a DNS-rebinding page names its own);
* every state-changing request is a POST carrying the CSRF token in a hidden field (checked by
  :meth:`Guard.check_form`); ``--read-only`` refuses every POST;
* every response forbids inline script, framing and outside resources (Content-Security-Policy):
  a second wall behind the escaping of memory bodies.
"""
from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl, urlencode

LOOPBACK = ("127.0.0.1", "localhost", "::1")
HEADERS = [
    (b"content-security-policy", b"default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; "
                                 b"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]


@dataclass
class Guard:
    """The secrets of one server run and the checks every request goes through."""
    host: str
    port: int
    read_only: bool = False
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    @property
    def cookie_name(self) -> str:
        return f"memrepo_ui_{self.port}"     # cookies ignore ports: one name per server

    def url(self, path: str = "/") -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{path}?{urlencode({'token': self.token})}"

    def allowed_hosts(self) -> set[str]:
        names = set(LOOPBACK) if self.host in LOOPBACK or self.host in ("0.0.0.0", "::") else set()
        names.add(self.host)
        return {f"[{n}]:{self.port}" if ":" in n else f"{n}:{self.port}" for n in names}

    def host_ok(self, header: str | None) -> bool:
        return header is not None and header.lower() in self.allowed_hosts()

    def cookie_ok(self, header: str | None) -> bool:
        if not header:
            return False
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(header)
        except Exception:   # a malformed Cookie header is no cookie
            return False
        morsel = jar.get(self.cookie_name)
        return morsel is not None and secrets.compare_digest(morsel.value, self.token)

    def token_ok(self, given: str | None) -> bool:
        return given is not None and secrets.compare_digest(given, self.token)

    def set_cookie(self) -> bytes:
        return f"{self.cookie_name}={self.token}; HttpOnly; SameSite=Strict; Path=/".encode()

    def check_form(self, form) -> str | None:
        """Why a posted form is refused ("read_only" or "csrf"), or None when it may act."""
        if self.read_only:
            return "read_only"
        given = form.get("csrf")
        if not isinstance(given, str) or not secrets.compare_digest(given, self.csrf):
            return "csrf"
        return None


class GuardMiddleware:
    """ASGI middleware: Host check, token-to-cookie exchange, cookie check, security headers."""

    def __init__(self, app, guard: Guard, forbidden):
        self.app, self.guard, self.forbidden = app, guard, forbidden

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        if not self.guard.host_ok(headers.get("host")):
            return await self._refuse(scope, receive, send, "host")
        if "token" in query:
            if not self.guard.token_ok(query["token"]):
                return await self._refuse(scope, receive, send, "token")
            rest = urlencode([(k, v) for k, v in query.items() if k != "token"])
            location = scope.get("path", "/") + (f"?{rest}" if rest else "")
            return await _send(send, 303, [(b"location", location.encode()), (b"set-cookie", self.guard.set_cookie())], b"")
        if not self.guard.cookie_ok(headers.get("cookie")):
            return await self._refuse(scope, receive, send, "cookie")

        async def with_headers(message):
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + HEADERS
            await send(message)
        return await self.app(scope, receive, with_headers)

    async def _refuse(self, scope, receive, send, why: str):
        status, body = self.forbidden(scope, why)
        return await _send(send, status, [(b"content-type", b"text/html; charset=utf-8")], body)


async def _send(send, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers + HEADERS})
    await send({"type": "http.response.body", "body": body})
