"""The console entry point (``memrepo``): one way in.

A per-turn command (``options.PER_TURN``: what an agent runs on every turn) is first offered to
the resident server (:mod:`memrepo.cli.client`), which answers it warm with the same typer app;
anything else, or a per-turn command no server answers, runs in this process through
:func:`memrepo.cli.app.main`, and a missing server is then started for the next call. Until
that point only the small client module is imported: a call the server answers never loads
typer or the library here.
"""
from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    from memrepo.cli import client
    command = client.eligible(argv)
    if command in client.WRITES and "--call-id" not in argv and "--file" not in argv:
        import uuid
        argv = [*argv, "--call-id", uuid.uuid4().hex]  # the server's write is named by it
    served = client.call(argv, command) if command else client.OFF
    if isinstance(served, int):
        return served
    from memrepo.cli import app
    if served == client.STOPPED:  # the server died during the write: what it wrote is looked up
        return app.main([*argv, "--find-call"])
    code = app.main(argv)
    if served == client.ABSENT:
        client.start()
    return code


if __name__ == "__main__":
    raise SystemExit(main())
