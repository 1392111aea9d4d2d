"""Who may talk to the window: the browser that opened the token link, on the bound address.

A page that can apply proposals and roll memories back must not be reachable by another web
page the person has open, nor by another user of the machine:

* the server binds the loopback address unless ``--host`` says otherwise;
* a random token travels in the first URL only; the first request with it gets an HttpOnly,
  SameSite=Strict cookie (as Jupyter does) and a page that goes on to the same URL without it;
  every other request without that cookie gets 403;
* the ``Host`` header must name the bound address (a DNS-rebinding page names its own);
* every state-changing request is a POST carrying the CSRF token in a hidden field (checked by
  :meth:`Guard.check_form`); ``--read-only`` refuses every POST;
* every response forbids inline script, framing and outside resources (Content-Security-Policy):
  a second wall behind the escaping of memory bodies.
"""
from __future__ import annotations

import html
import secrets
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, quote_from_bytes, unquote_plus, urlencode

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
        """Whether one of the request's cookies of this server's name holds the token.

        Read as browsers send cookies, pair by pair: cookies ignore ports, so the header also
        carries whatever other local web apps set on this host name (JSON values, spaces), and
        one that a strict parser refuses must not hide ours; a same-named cookie planted by a
        page on another port (sent first when its path is longer) must not shadow it."""
        for pair in (header or "").split(";"):
            name, sep, value = pair.strip().partition("=")
            if sep and name == self.cookie_name and _same(value.strip(), self.token):
                return True
        return False

    def token_ok(self, given: str | None) -> bool:
        return given is not None and _same(given, self.token)

    def set_cookie(self) -> bytes:
        return f"{self.cookie_name}={self.token}; HttpOnly; SameSite=Strict; Path=/".encode()

    def check_form(self, form) -> str | None:
        """Why a posted form is refused ("read_only" or "csrf"), or None when it may act."""
        if self.read_only:
            return "read_only"
        given = form.get("csrf")
        if not isinstance(given, str) or not _same(given, self.csrf):
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
            return await _send(send, 200, [(b"content-type", b"text/html; charset=utf-8"), (b"set-cookie", self.guard.set_cookie())],
                               _onward(_without_token(scope)))
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


def _without_token(scope) -> bytes:
    """The URL of this request, relative to this server, without its ``token`` parameter: the
    path and the other parameters exactly as the browser sent them (escapes, repeated keys),
    and never ``//host`` (nor ``/\\host``: a backslash is escaped), which a browser reads as another server."""
    raw = scope.get("raw_path") or scope.get("path", "/").encode("utf-8")
    path = b"/" + quote_from_bytes(raw, safe="/%:@!$&'()*+,;=-._~").encode().lstrip(b"/")
    kept = [pair for pair in scope.get("query_string", b"").split(b"&")
            if pair and unquote_plus(pair.split(b"=", 1)[0].decode("latin-1")) != "token"]
    return path + (b"?" + b"&".join(kept) if kept else b"")


def _onward(url: bytes) -> bytes:
    """The answer to the token link: a page that goes on to ``url`` by itself.

    Not a redirect: a redirect belongs to the navigation the link started, and when the link
    was followed from another site (a chat, a web IDE, the file the browser is opened on) that
    navigation is cross-site, so the SameSite=Strict cookie just set is not sent with it, nor on
    a reload. This page's own navigation is same-site."""
    link = html.escape(url.decode("ascii"))
    return (f'<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0; url={link}">'
            f'<title>memrepo ui</title><p><a href="{link}">memrepo ui</a></p>\n').encode()


def _same(given: str, secret: str) -> bool:
    """A constant-time comparison that any text may reach (compare_digest refuses non-ASCII str)."""
    return secrets.compare_digest(given.encode("utf-8", "surrogateescape"), secret.encode())


async def _send(send, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers + HEADERS})
    await send({"type": "http.response.body", "body": body})
