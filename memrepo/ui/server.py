"""The web server of ``memrepo ui``: a Starlette app behind the guard, served by Uvicorn.

Why this stack: Starlette is a small, well-kept ASGI toolkit (routing, forms, static files and
nothing else), Uvicorn its usual server, Jinja2 escapes every value by default, and
markdown-it-py renders CommonMark with raw HTML off. The MCP SDK already depends on the first
two; all of them are imported only when ``memrepo ui`` runs, so the per-turn commands do not
pay for them. Handlers run on the server's one event-loop thread, one at a time: a person's
window never races itself, and the vault's SQLite catalog stays on the thread that opened it.
"""
from __future__ import annotations

import html
import inspect
import os
import shutil
import socket
import tempfile
import webbrowser
from pathlib import Path
from typing import Callable

from memrepo.ui import i18n, render
from memrepo.ui.pages import Window
from memrepo.ui.security import Guard, GuardMiddleware


def make_app(root: Path, guard: Guard, *, lang: str | None = None):
    """The ASGI application for the vault at ``root``, every request through ``guard``."""
    from starlette.applications import Starlette
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    window = Window(root, guard, lang=lang)

    def route(path: str, handler, methods=("GET", "HEAD")):
        async def endpoint(request):
            try:
                result = handler(request)
                return await result if inspect.isawaitable(result) else result
            except Exception as e:   # every failure is a page: MemrepoError's message, or what broke
                return window.error(request, e)
        return Route(path, endpoint, methods=list(methods))

    routes = [
        route("/", window.inbox),
        route("/bulk", window.bulk, ("POST",)),
        route("/proposal/{pid}", window.proposal),
        route("/proposal/{pid}/raw", window.raw_diff),
        route("/proposal/{pid}/apply", window.apply, ("POST",)),
        route("/proposal/{pid}/reject", window.reject, ("POST",)),
        route("/memories", window.memories),
        route("/memory/{mid}", window.memory),
        route("/memory/{mid}/rollback", window.rollback, ("POST",)),
        route("/graph", window.graph),
        route("/distill", window.distill),
        Mount("/static", app=StaticFiles(directory=str(render.STATIC)), name="static"),
    ]
    app = Starlette(routes=routes)

    def forbidden(scope, why: str) -> tuple[int, bytes]:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        language = i18n.choose(headers.get("accept-language"), lang)
        message = i18n.text(language, "error.host" if why == "host" else "error.forbidden")
        return 403, render.page("forbidden.html", lang=language, message=message).encode("utf-8")

    return GuardMiddleware(app, guard, forbidden)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port`` (0: a free port the system picks)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock


def serve(root: Path, *, host: str = "127.0.0.1", port: int = 0, read_only: bool = False, lang: str | None = None,
          open_browser: bool = True, ready: Callable[[str], None] | None = None) -> None:
    """Serve the window until Ctrl-C (or SIGTERM); ``ready(url)`` is called with the token URL
    once the socket listens."""
    import uvicorn
    sock = bind(host, port)
    guard = Guard(host=host, port=sock.getsockname()[1], read_only=read_only)
    app = make_app(root, guard, lang=lang)
    url = guard.url()
    if ready:
        ready(url)
    folder = open_in_browser(url) if open_browser else None
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", server_header=False)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def open_in_browser(url: str) -> Path:
    """Open the token link in the person's browser through a page only they can read; returns
    the private folder holding it (removed when the server stops).

    A browser started with the link itself keeps the token in its command line, which every
    user of the machine can read (``ps``); so it is given a file (mode 0600, in a 0700 folder)
    that sends it on to the link, as Jupyter does."""
    folder = Path(tempfile.mkdtemp(prefix="memrepo-ui-"))
    page = folder / "open.html"
    link = html.escape(url)
    with os.fdopen(os.open(page, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w", encoding="utf-8") as out:
        out.write(f'<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0; url={link}">'
                  f'<title>memrepo ui</title><p><a href="{link}">Open memrepo ui</a></p>\n')
    webbrowser.open(page.as_uri())
    return folder
