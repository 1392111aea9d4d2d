"""What the installed git hook shims and the merge driver run: ``python -m memrepo.cli.hook_entry``.

A commit pays for this on every ``git commit``, so it skips typer; ``memrepo hook pre-commit``
(for the pre-commit framework and for people) runs the same :func:`pre_commit`.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from memrepo import api
from memrepo.cli import failures
from memrepo.cli.options import AGENT_ENV


def pre_commit() -> int:
    """Validate what is staged (git runs hooks at the top of the work tree); 1 refuses the commit."""
    problems = api.run_pre_commit(Path.cwd(), agent=os.environ.get(AGENT_ENV) or None)
    if not problems:
        return 0
    print("memrepo: commit refused:", file=sys.stderr)
    for p in problems:
        print(f"  {p}", file=sys.stderr)
    print("Fix the files (or 'memrepo validate' to see all), then commit again.", file=sys.stderr)
    return 1


def main(argv: list[str]) -> int:
    """``pre-commit`` / ``pre-merge-commit`` (the hook shims), ``merge-driver %O %A %B %P`` (git's merge driver)."""
    try:
        if argv and argv[0] == "merge-driver":
            return api.merge_files(*argv[1:5])
        return pre_commit()
    except BaseException as e:  # noqa: BLE001 — the command line's one map from a failure to its exit code
        code = failures.exit_code(e)
        if code is None:
            raise
        return code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
