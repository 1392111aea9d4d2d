"""Private and shared memory: where an agent's private memories live and who sees them.

The shared pool is the vault itself (its ``main``, shared through any git remote). An agent's
private memories live in a separate git repository, the agent's *private vault*, at
``.memrepo/private/<agent>/`` inside the shared vault's folder: it is git-ignored by the shared
vault and it is not a branch of it, so no ``git push`` of the shared vault (``memrepo sync``
included) can ever carry it to a remote. Privacy holds with git alone, without trusting any
filter in memrepo. The private vault is a full vault (same checks, hooks and history) whose
``[vault] owner`` names the agent: its write path and hooks refuse any other agent.

Reading merges the two: an agent's ``search`` and ``list`` see the shared pool plus its own
private vault, never another agent's.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrepo.errors import InvalidMemory, Problem, UsageError
from memrepo.store.vault import Vault

if TYPE_CHECKING:
    from memrepo.review import writes

PRIVATE_DIR = ".memrepo/private"
AGENT_RE = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")


def current_agent(agent: str | None = None) -> str | None:
    """The acting agent's name, checked (None or "" when no agent is named: None). The library
    never reads it from the environment: the command line passes ``--agent`` or ``$MEMREPO_AGENT``."""
    agent = agent or None
    if agent is not None and (not AGENT_RE.match(agent) or agent.startswith(".")):
        raise UsageError(f"agent name {agent!r} is not valid: use letters, digits, '_', '.', '@' or '-' (at most 64)")
    return agent


def require_agent(agent: str | None, what: str) -> str:
    agent = current_agent(agent)
    if agent is None:
        raise UsageError(f"{what} needs an agent: pass --agent NAME (before or after the command) or set MEMREPO_AGENT")
    return agent


def private_root(vault: Vault, agent: str) -> Path:
    return vault.root / PRIVATE_DIR / agent


def private_vault(vault: Vault, agent: str, *, create: bool = False) -> Vault | None:
    """The agent's private vault (created on first private write with ``create``)."""
    if vault.owner is not None:
        raise UsageError(f"{vault.root} is itself the private vault of {vault.owner}; use the shared vault")
    root = private_root(vault, agent)
    if (root / ".memrepo").is_dir():
        return Vault(root)
    if not create:
        return None
    _exclude(vault)
    from memrepo.config import CONFIG_PATH
    from memrepo.review import hooks
    private = Vault.init(root)
    hooks.install(private.root)
    config = private.root / CONFIG_PATH
    text = config.read_text(encoding="utf-8").replace(
        "[vault]\n", f'[vault]\nowner = "{agent}"            # private vault of this agent: never shared\n', 1)
    with private.lock():
        private.commit(files={CONFIG_PATH: text.encode("utf-8")},
                       message=f"memrepo: private vault of agent {agent}\n\nMemrepo-Action: private-vault\n")
    return Vault(root)


def _exclude(vault: Vault) -> None:
    """Keep the private vaults out of the shared vault's git even where .gitignore lacks them."""
    from memrepo.store import git
    exclude = git.git_path(vault.root, "info/exclude")
    line = f"/{PRIVATE_DIR}/"
    text = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
    if line not in text.splitlines():
        exclude.parent.mkdir(parents=True, exist_ok=True)
        exclude.write_text(text + ("" if text.endswith("\n") or not text else "\n") + line + "\n", encoding="utf-8")


def scope_of(value: str | None, agent: str | None) -> str | None:
    """``private`` becomes ``private:<agent>``; another agent's private scope is refused."""
    if value is None or value == "shared":
        return value
    if value == "private":
        return f"private:{require_agent(agent, '--scope private')}"
    if value.startswith("private:"):
        owner = value.split(":", 1)[1]
        if owner != current_agent(agent):
            who = current_agent(agent) or "an unnamed agent"
            raise InvalidMemory([Problem("(new memory)", "scope", f"{value!r} is the private scope of agent {owner}; "
                                         f"{who} may not write it (use --scope private for your own)")], "nothing was written")
        return value
    raise InvalidMemory([Problem("(new memory)", "scope", f"{value!r} is not a scope: use shared or private")], "nothing was written")


def add(vault: Vault, fields: dict[str, Any], body: str = "", *, agent: str | None = None, **options: Any) -> writes.WriteResult:
    """``add`` with scopes: a private memory goes to the agent's private vault, the rest as usual.
    The write path (schema, credential scan, risk) loads here, not with the module: a search
    turn, which imports this module too, never needs it."""
    from memrepo.review import writes

    scope = scope_of(fields.get("scope"), agent)
    fields = {**fields, "scope": scope}
    if scope and scope.startswith("private:"):
        name = scope.split(":", 1)[1]
        private = private_vault(vault, name, create=True)
        assert private is not None
        with private:
            return writes.add(private, fields, body, author=options.pop("author", None) or name, agent=agent, **options)
    return writes.add(vault, fields, body, agent=agent, **options)


def visible_vaults(vault: Vault, agent: str | None = None) -> list[Vault]:
    """The vaults an agent reads: the shared one, then its own private vault if it has one."""
    agent = current_agent(agent)
    found = [vault]
    if agent and vault.owner is None:
        private = private_vault(vault, agent)
        if private is not None:
            found.append(private)
    return found


def list_memories(vault: Vault, *, agent: str | None = None, **filters: str | None) -> list[dict]:
    """``list`` over the shared pool plus the agent's own private memories (marked ``scope``)."""
    rows = []
    for v in visible_vaults(vault, agent):
        scope = f"private:{v.owner}" if v.owner else "shared"
        rows += [{**r, "scope": scope} for r in v.list(**filters)]
        if v is not vault:
            v.close()
    return sorted(rows, key=lambda r: (r["created"] or "", r["path"]))


def search(vault: Vault, text: str, *, agent: str | None = None, **options: Any):
    """Search the shared pool plus the agent's private vault; hits merged by score."""
    from dataclasses import replace

    from memrepo.retrieval import search as svc
    vaults = visible_vaults(vault, agent)
    result, report = svc.search(vault, text, **options)
    if len(vaults) == 1:
        return result, report
    with vaults[1] as private:
        mine, _ = svc.search(private, text, **options)
    limit = options.get("limit") or 10
    hits = sorted(result.hits + mine.hits, key=lambda h: -h.score)[:limit]
    return replace(result, hits=tuple(hits), nothing_relevant=result.nothing_relevant and mine.nothing_relevant), report


def get(vault: Vault, memory_id: str, *, agent: str | None = None):
    """A memory by id from the shared pool or, failing that, the agent's private vault."""
    from memrepo.errors import NotFound
    vaults = visible_vaults(vault, agent)
    for v in vaults:
        try:
            return v.get(memory_id)
        except NotFound:
            if v is vaults[-1]:
                raise
    raise NotFound(memory_id)
