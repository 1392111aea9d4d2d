"""What the installed git hook shims run: the staged check without the command line's start-up.

A commit pays for this on every ``git commit``, so it skips typer (the CLI's ``memrepo hook
pre-commit`` does the same work, for the pre-commit framework and for people).
"""
from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    if argv and argv[0] == "merge-driver":  # git's merge driver for memory files (memrepo hooks install)
        from memrepo.team.merge import merge_files
        return merge_files(*argv[1:5])
    from memrepo.errors import MemrepoError
    from memrepo.review.hooks import run_pre_commit

    try:
        problems = run_pre_commit(Path.cwd())
    except MemrepoError as e:
        print(f"memrepo: {e}", file=sys.stderr)
        return e.exit_code
    if not problems:
        return 0
    print("memrepo: commit refused:", file=sys.stderr)
    for p in problems:
        print(f"  {p}", file=sys.stderr)
    print("Fix the files (or 'memrepo validate' to see all), then commit again.", file=sys.stderr)
    return 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
