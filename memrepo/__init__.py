"""memrepo: a git-backed, plain-file long-term memory repository for AI agents.

The public Python API is :mod:`memrepo.api` (its names are re-exported here, loaded on first
use, so that ``import memrepo`` stays free for the command line's entry point); the command
line (:mod:`memrepo.cli`) and the MCP server (:mod:`memrepo.mcp`) are thin layers over it.
The packages and their one direction of imports are described in tests/test_architecture.py.
"""
__version__ = "0.1.0"


def __getattr__(name: str) -> object:  # no typing import here: every ``memrepo`` call starts by importing this
    import importlib
    import os

    here = os.path.dirname(__file__)
    if name != "api" and (os.path.exists(os.path.join(here, f"{name}.py")) or os.path.isdir(os.path.join(here, name))):
        raise AttributeError(name)  # a submodule not imported yet (``from memrepo import config``): Python loads it
    api = importlib.import_module("memrepo.api")
    if name == "api":
        return api
    if name in api.__all__:
        return getattr(api, name)
    raise AttributeError(f"module 'memrepo' has no attribute {name!r}")
