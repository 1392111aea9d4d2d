"""Kept for hook shims installed before the package layout: they run ``python -m memrepo.hook_entry``.

``memrepo hooks install`` writes shims that call :mod:`memrepo.cli.hook_entry` directly.
"""
import sys

from memrepo.cli.hook_entry import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
