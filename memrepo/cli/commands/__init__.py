"""The command groups of ``memrepo``, one module each (memrepo.cli.app.GROUPS lists them).

A module declares its commands on its own ``app = typer.Typer()``; a command parses its
options, calls one function of :mod:`memrepo.api` and renders the result with
:mod:`memrepo.cli.output`. Failures are raised, never printed here.
"""
