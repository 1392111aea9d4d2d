"""Git hooks: installing memrepo's shims without clobbering a user's own hooks, and running them.

The shims in the top-level ``hooks/`` folder are 10-line shell scripts marked ``memrepo-hook``;
installing one where a foreign hook already exists keeps that hook as ``<name>.legacy`` and
the shim runs it first. Re-installing is idempotent.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from memrepo.errors import Conflict, Problem, UsageError
from memrepo.resources import resource
from memrepo.store import git

HOOK_NAMES = ("pre-commit", "pre-merge-commit")
MARKER = "memrepo-hook"


def install(root: Path, *, python: str | None = None) -> list[str]:
    """Install the hooks into the repository's hooks folder; returns what was done, per hook."""
    _refuse_shared_hooks_path(root)
    hooks_dir = git.git_path(root, "hooks")
    hooks_dir.mkdir(parents=True, exist_ok=True)
    done = []
    for name in HOOK_NAMES:
        text = (resource("hooks") / name).read_text(encoding="utf-8").replace("@PYTHON@", python or sys.executable)
        target = hooks_dir / name
        if target.exists() and MARKER not in target.read_text(encoding="utf-8", errors="replace"):
            legacy = hooks_dir / f"{name}.legacy"
            if legacy.exists():
                raise FileExistsError(f"{target} and {legacy} both exist; merge them by hand, then rerun 'memrepo hooks install'")
            target.rename(legacy)
            done.append(f"{name}: kept your hook as {legacy.name}")
        target.write_text(text, encoding="utf-8")
        target.chmod(0o777 & ~_umask())  # executable, readable by whom the user's umask allows
        done.append(f"{name}: installed")
    return done


def _umask() -> int:
    """The process's umask (read by setting it and putting it back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _refuse_shared_hooks_path(root: Path) -> None:
    """A ``core.hooksPath`` from the global or system config is a folder every repository uses:
    installing there would run memrepo's hook (and rename a person's own) in all of them."""
    found = git.config_with_scope(root, "core.hooksPath")
    if not found:
        return
    scope, where = found
    if scope in ("local", "worktree"):
        return
    raise UsageError(
        f"core.hooksPath is set in your {scope} git config ({where}), a folder every repository uses; "
        f"memrepo will not install its hooks there. Give this vault its own hooks folder: "
        f"'git -C {root} config core.hooksPath .git/hooks', then 'memrepo hooks install' "
        f"(your other repositories keep the {scope} setting)")


def _merging_now() -> str | None:
    """The commit ``git merge`` is merging while pre-merge-commit runs.

    git writes MERGE_HEAD only after that hook, but exports ``GITHEAD_<sha>=<name>`` for the
    merge it is making; without it a teammate pulling a proposal merged on the forge into a
    diverged main would be refused, as if the high-risk memory skipped review.
    """
    heads = [k.removeprefix("GITHEAD_") for k in os.environ if k.startswith("GITHEAD_")]
    return heads[0] if len(heads) == 1 and len(heads[0]) >= 40 else None


def run_pre_commit(start: Path, *, agent: str | None = None) -> list[Problem]:
    """The pre-commit check for the vault at ``start`` (git runs hooks at the top level);
    ``agent``: the agent committing (a private memory is only its own agent's to write)."""
    from memrepo.review.validate import check_staged
    from memrepo.store.vault import Vault

    vault = Vault.find(start, recover=False)  # git holds the index lock now: it cannot be finished here
    if vault.interrupted():
        raise Conflict(_interrupted_message(vault))
    merge_head_file = git.git_path(vault.root, "MERGE_HEAD")
    merge_head = merge_head_file.read_text().split()[0] if merge_head_file.exists() else _merging_now()
    index_file = os.environ.get("GIT_INDEX_FILE")
    if index_file and not os.path.isabs(index_file):
        index_file = str(vault.root / index_file)
    with vault:
        return check_staged(vault, index_file=index_file, merge_head=merge_head, agent=agent)


def _interrupted_message(vault) -> str:
    """Why a commit must wait: a memrepo write in progress, or one killed half-way."""
    from memrepo.store.lock import is_locked
    if is_locked(git.git_path(vault.root, "memrepo.store.lock")):
        return "a memrepo write is in progress; commit again in a moment (nothing was committed)"
    return ("a memrepo write was interrupted and the checkout lags behind main (committing now would undo it); "
            "run 'memrepo recover' to finish it, then commit again (nothing was committed)")
