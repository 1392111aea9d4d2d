"""What the installed git hook shims run: the staged check without the command line's start-up.

A commit pays for this on every ``git commit``, so it skips typer (the CLI's ``memrepo hook
pre-commit`` does the same work, for the pre-commit framework and for people).
"""
from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    if argv and argv[0] == "merge-driver":  # git's merge driver for memory files (memrepo hooks install)
        from memrepo.team.merge import merge_files
        return merge_files(*argv[1:5])
    from memrepo.cli.commands import hook_pre_commit
    from memrepo.errors import MemrepoError

    try:
        return hook_pre_commit() or 0
    except MemrepoError as e:
        print(f"memrepo: {e}", file=sys.stderr)
        return e.exit_code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
