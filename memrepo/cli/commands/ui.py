"""``memrepo ui``: serve a person's window on the vault (the web stack is imported only here)."""
from __future__ import annotations

import os
import sys
from typing import Optional

import typer

from memrepo import api
from memrepo.cli import call, params
from memrepo.cli.output import echo
from memrepo.errors import UsageError
from memrepo.model import check_choice

app = typer.Typer()


@app.command("ui", epilog=params.examples("memrepo ui", "memrepo ui --read-only --lang zh --port 8765 --no-open"))
def ui(port: int = typer.Option(0, "--port", min=0, help="Port to listen on (default: a free one)."),
       host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (default loopback; anything else is reachable by others: a warning is printed)."),
       no_open: bool = typer.Option(False, "--no-open", help="Do not open a browser (print the URL only)."),
       read_only: bool = typer.Option(False, "--read-only", help="Show everything, change nothing: no action is offered or accepted."),
       lang: Optional[str] = typer.Option(None, "--lang", help="en or zh (default: the browser's Accept-Language)."),
       vault: Optional[str] = typer.Option(None, "--vault", help="Vault to serve (default: the global --vault, or found as git does).")):
    """Open a local web page to review proposals and see what the agent remembers (Ctrl-C stops it)."""
    from memrepo.ui import server  # the other interface: the web stack loads for this command only
    from memrepo.ui.i18n import LANGUAGES
    from memrepo.ui.security import LOOPBACK
    check_choice("lang", lang, LANGUAGES)
    with api.Vault.find(explicit=vault or call.state.vault_path) as found:
        root = found.root
    if host not in LOOPBACK:
        echo(f"warning: listening on {host}: anyone who can reach this address and learns the link can change "
             "the vault (the token in the link is the only key); prefer the default 127.0.0.1", err=True)

    def ready(url: str) -> None:
        echo(f"memrepo ui: serving {root}{' (read-only)' if read_only else ''}\n  {url}\n"
             "Open that link (it carries the access token); Ctrl-C stops the server.")
    try:
        server.serve(root, host=host, port=port, read_only=read_only, lang=lang,
                     open_browser=not no_open and _has_display(), ready=ready)
    except KeyboardInterrupt:   # Ctrl-C is how a person stops the server: it has shut down cleanly
        pass
    except OSError as e:
        raise UsageError(f"cannot listen on {host}:{port}: {e.strerror or e}; choose another --port or --host") from None
    echo("memrepo ui: stopped")


def _has_display() -> bool:
    """Whether a browser can open here (a desktop session, or macOS / Windows)."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
