"""memrepo: a git-backed, plain-file long-term memory repository for AI agents.

The public Python API lives in :mod:`memrepo.api`; the command line in :mod:`memrepo.cli`
is a thin layer over it.
"""

__version__ = "0.1.0"
