"""Where a person opens the pull request for a pushed proposal: the forge's compare page.

Built from the remote's URL alone (no network call): GitHub and Gitea/Forgejo show
``<repo>/compare/<main>...<branch>``, GitLab ``<repo>/-/merge_requests/new`` with the source and
target branches. The forge is known from the host name (github, gitlab, gitea, codeberg,
forgejo); a self-hosted forge on another name is named with ``git config memrepo.forge
github|gitlab|gitea``. A remote that is a local path, or a host of no known kind, has no URL.
"""
from __future__ import annotations

import re
from urllib.parse import quote

from memrepo.store import git
from memrepo.store.vault import Vault

FORGES = ("github", "gitlab", "gitea")
_HOST_HINTS = (("github", "github"), ("gitlab", "gitlab"), ("gitea", "gitea"), ("codeberg", "gitea"), ("forgejo", "gitea"))
_SCP = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?P<path>[^/].*)$")          # git@host:owner/repo.git
_URL = re.compile(r"^(?:https?|ssh|git)://(?:[^@/]+@)?(?P<host>[^/:]+)(?::\d+)?/(?P<path>.+)$")


def web_base(remote_url: str) -> tuple[str, str] | None:
    """(host, repository path) of a remote URL, or None for a local path or an unknown form."""
    url = remote_url.strip()
    match = _URL.match(url) or (None if "://" in url or url.startswith(("/", ".")) else _SCP.match(url))
    if not match:
        return None
    path = match.group("path").strip("/").removesuffix(".git").strip("/")
    return (match.group("host"), path) if path else None


def forge_kind(host: str, configured: str | None = None) -> str | None:
    if configured in FORGES:
        return configured
    name = host.lower()
    return next((kind for hint, kind in _HOST_HINTS if hint in name), None)


def compare_link(remote_url: str, *, branch: str, target: str = "main", kind: str | None = None) -> str | None:
    """The forge page that opens a pull (merge) request from ``branch`` into ``target``."""
    found = web_base(remote_url)
    if found is None:
        return None
    host, path = found
    forge = forge_kind(host, kind)
    if forge is None:
        return None
    repo = f"https://{host}/{quote(path)}"
    if forge == "gitlab":
        return (f"{repo}/-/merge_requests/new?merge_request%5Bsource_branch%5D={quote(branch, safe='')}"
                f"&merge_request%5Btarget_branch%5D={quote(target, safe='')}")
    return f"{repo}/compare/{quote(target, safe='')}...{quote(branch, safe='/')}"


def compare_url(vault: Vault, ref: str, *, remote: str = "origin") -> str | None:
    """The compare page for proposal ``ref``'s branch on ``remote`` (None when the remote is
    missing, local, or on a forge of no known kind)."""
    from memrepo.review import proposals
    url = git.config_with_scope(vault.root, f"remote.{remote}.url")
    if url is None:
        return None
    configured = git.config_with_scope(vault.root, "memrepo.forge")
    branch = proposals.BRANCH_PREFIX + proposals.get(vault, ref).id
    return compare_link(url[1], branch=branch, target=vault.main_branch, kind=configured[1] if configured else None)
