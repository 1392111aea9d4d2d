"""memrepo: a git-backed, plain-file long-term memory repository for AI agents.

The public Python API is :mod:`memrepo.api` (its names are re-exported here, loaded on first use);
the command line (:mod:`memrepo.cli`) and the MCP server are thin layers over it.

Packages, one direction of imports (each imports only those to its right)::

    cli -> api -> lifecycle -> review | retrieval -> store -> values (errors, model, text, config)
"""
__version__ = "0.1.0"


def __getattr__(name: str) -> object:  # no typing import here: every ``memrepo`` call starts by importing this
    import importlib

    api = importlib.import_module("memrepo.api")
    if name == "api":
        return api
    if name in api.__all__:
        return getattr(api, name)
    raise AttributeError(f"module 'memrepo' has no attribute {name!r}")
