"""Claude Code in one command: memrepo's hooks and MCP server written into Claude Code's own
configuration, merged into what is there, and taken out again exactly.

What is installed (checked against Claude Code's hooks reference, v2.1.239):

=================  ==========================  ============================================
event              command                     what Claude Code does with it
=================  ==========================  ============================================
SessionStart       ``context --hook``          plain stdout is added to the context
SessionStart       ``flush --prompt --hook``   the compaction instructions, in the context
                                               the compactor summarises
UserPromptSubmit   ``recall --hook``           plain stdout is added next to the prompt
PostCompact        ``flush --hook``            none (stdout goes to the debug log): memrepo
                                               files ``compact_summary`` as a checkpoint
=================  ==========================  ============================================

No PreCompact hook: the reference gives it no output that reaches the compaction (it can only
block it). A failing hook exits 1 (a non-blocking error), never 2 (exit 2 on UserPromptSubmit
erases the prompt). The MCP server (``mcp``) is the ``memrepo`` entry of ``mcpServers``.

Where (``scope``): ``project`` writes ``.claude/settings.json`` and ``.mcp.json`` in the project
folder; ``user`` writes ``~/.claude/settings.json`` and the user-scope servers of
``~/.claude.json`` (both under ``$CLAUDE_CONFIG_DIR`` when it is set). Commands use absolute
paths (the memrepo program and the vault), so they work whatever the hook's working directory
and ``PATH``. A handler is memrepo's when its command runs a memrepo program with one of the
argument lists above: install replaces those (so it is idempotent) and uninstall removes only
those, leaving every other key, hook and server as it was.
"""
from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrepo.errors import Conflict, UsageError
from memrepo.store.files import atomic_write

SERVER = "memrepo"
MCP_AGENT = "claude-code"
HOOKS: dict[str, list[list[str]]] = {
    "SessionStart": [["context", "--hook"], ["flush", "--prompt", "--hook"]],
    "UserPromptSubmit": [["recall", "--hook"]],
    "PostCompact": [["flush", "--hook"]],
}
TIMEOUTS = {"SessionStart": 30, "UserPromptSubmit": 30, "PostCompact": 120}
SCOPES = ("project", "user")


@dataclass(frozen=True)
class Targets:
    settings: Path
    mcp: Path
    scope: str


@dataclass(frozen=True)
class Change:
    scope: str
    settings: str
    mcp: str
    hooks: tuple[str, ...] = ()
    server: bool = False
    changed: tuple[str, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        return {"scope": self.scope, "settings": self.settings, "mcp": self.mcp, "hooks": list(self.hooks),
                "server": self.server, "changed": list(self.changed)}


def config_dir() -> Path:
    given = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(given).expanduser() if given else Path.home() / ".claude"


def targets(scope: str, project: Path | None = None) -> Targets:
    """The files a ``scope`` install writes."""
    if scope not in SCOPES:
        raise UsageError(f"scope {scope!r} is not one of {', '.join(SCOPES)}")
    if scope == "user":
        state = config_dir() / ".claude.json" if os.environ.get("CLAUDE_CONFIG_DIR") else Path.home() / ".claude.json"
        return Targets(config_dir() / "settings.json", state, scope)
    root = Path(project or Path.cwd()).resolve()
    return Targets(root / ".claude" / "settings.json", root / ".mcp.json", scope)


def _quoted(argv: list[str]) -> str:
    return " ".join(shlex.quote(a) for a in argv)


def is_memrepo(argv: list[str]) -> int:
    """How many leading words of ``argv`` run memrepo (0: not memrepo): ``/x/memrepo`` or
    ``/x/python -m memrepo``."""
    if argv and Path(argv[0]).name == "memrepo":
        return 1
    if len(argv) >= 3 and argv[1:3] == ["-m", "memrepo"]:
        return 3
    return 0


def _tail(argv: list[str]) -> list[str] | None:
    """The memrepo arguments after the program and an optional ``--vault PATH``."""
    n = is_memrepo(argv)
    if not n:
        return None
    rest = argv[n:]
    if rest[:1] == ["--vault"] and len(rest) >= 2:
        rest = rest[2:]
    return rest


def is_ours(handler: Any) -> bool:
    """True for a hook handler memrepo installs (whatever program path or vault it names)."""
    if not isinstance(handler, dict) or handler.get("type") != "command" or not isinstance(handler.get("command"), str):
        return False
    try:
        argv = shlex.split(handler["command"]) + [str(a) for a in handler.get("args") or []]
    except ValueError:
        return False
    return any(_tail(argv) == tail for tails in HOOKS.values() for tail in tails)


def _server_is_ours(entry: Any) -> bool:
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return False
    argv = [entry["command"], *[str(a) for a in entry.get("args") or []]]
    tail = _tail(argv)
    return tail is not None and "mcp" in tail


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise UsageError(f"{path} cannot be read as JSON ({e}); fix or move it, then install again "
                         "(nothing was changed)") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path} is not a JSON object; fix or move it, then install again (nothing was changed)")
    hooks = data.get("hooks")
    bad = ("hooks" if hooks is not None and not isinstance(hooks, dict) else
           next((f"hooks.{e}" for e, groups in (hooks or {}).items() if not isinstance(groups, list)), None))
    if bad is not None:
        raise UsageError(f"{path}: '{bad}' is not what Claude Code reads (an object of events, each a list of hook "
                         "groups); fix it by hand, then install again (nothing was changed)")
    return data


def _writable(*paths: Path) -> None:
    """Refuse before anything is written: a file behind a link (a dotfiles checkout) is edited
    where it lives, by its owner, and a read-only file stays as its owner made it."""
    for path in paths:
        if path.is_symlink():
            raise Conflict(f"{path} is a symlink; memrepo never writes through links: add memrepo to the file it "
                           "points at by hand (docs/claude.md shows the entries), or replace the link with a copy "
                           "(nothing was changed)")
        if path.exists() and not path.stat().st_mode & 0o200:
            raise Conflict(f"{path} is read-only; make it writable (chmod u+w) to let memrepo change it "
                           "(nothing was changed)")


def _write(path: Path, data: dict[str, Any], before: dict[str, Any]) -> bool:
    if data == before:
        return False
    if not data and path.exists():
        path.unlink()
        return True
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    atomic_write(path, (json.dumps(data, ensure_ascii=False, indent=2) + "\n").encode("utf-8"), mode=mode)
    return True


def _without_ours(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` with memrepo's hook handlers taken out (and the groups and events they leave empty)."""
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return dict(settings)
    kept: dict[str, Any] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            kept[event] = groups
            continue
        new_groups = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                handlers = [h for h in group["hooks"] if not is_ours(h)]
                if handlers or len(handlers) == len(group["hooks"]):
                    new_groups.append({**group, "hooks": handlers})
            else:
                new_groups.append(group)
        if new_groups or not groups:
            kept[event] = new_groups
    out = dict(settings)
    if kept or not hooks:
        out["hooks"] = kept
    else:
        out.pop("hooks", None)
    return out


def _check_scope_is_free(targets_: Targets, servers: dict[str, Any]) -> None:
    entry = servers.get(SERVER)
    if entry is not None and not _server_is_ours(entry):
        raise Conflict(f"{targets_.mcp} already has an MCP server named {SERVER!r} that is not memrepo's; rename or "
                       "remove it, then install again (nothing was changed)")


def install_claude_code(*, program: list[str], vault: Path, scope: str = "project", project: Path | None = None) -> Change:
    """Write memrepo's hooks and MCP server for Claude Code; ``program`` is the argv that runs
    this memrepo (absolute), ``vault`` the vault the hooks and the server use."""
    where = targets(scope, project)
    vault = Path(vault).resolve()
    base = [*program, "--vault", str(vault)]
    settings, state = _read(where.settings), _read(where.mcp)
    servers: dict[str, Any] = state["mcpServers"] if isinstance(state.get("mcpServers"), dict) else {}
    _check_scope_is_free(where, servers)
    _writable(where.settings, where.mcp)
    new_settings = _without_ours(settings)
    hooks = dict(new_settings.get("hooks") or {})
    for event, tails in HOOKS.items():
        group = {"hooks": [{"type": "command", "command": _quoted([*base, *tail]), "timeout": TIMEOUTS[event]}
                           for tail in tails]}
        existing = hooks.get(event)
        hooks[event] = [*(existing if isinstance(existing, list) else []), group]
    new_settings["hooks"] = hooks
    new_state = {**state, "mcpServers": {**servers, SERVER: {"type": "stdio", "command": program[0],
                                                              "args": [*program[1:], "--vault", str(vault), "mcp",
                                                                       "--agent", MCP_AGENT], "env": {}}}}
    changed = [str(p) for p, new, old in ((where.settings, new_settings, settings), (where.mcp, new_state, state))
               if _write(p, new, old)]
    return Change(scope, str(where.settings), str(where.mcp), tuple(HOOKS), True, tuple(changed))


def uninstall_claude_code(*, scope: str = "project", project: Path | None = None) -> Change:
    """Take out exactly what :func:`install_claude_code` put in: memrepo's hook handlers and its MCP server."""
    where = targets(scope, project)
    settings, state = _read(where.settings), _read(where.mcp)
    new_settings = _without_ours(settings)
    removed = tuple(e for e in HOOKS if e in (settings.get("hooks") or {}) and
                    _without_ours({"hooks": {e: settings["hooks"][e]}}) != {"hooks": {e: settings["hooks"][e]}})
    servers: dict[str, Any] = state["mcpServers"] if isinstance(state.get("mcpServers"), dict) else {}
    ours = _server_is_ours(servers.get(SERVER))
    new_state = dict(state)
    _writable(*[p for p, changes in ((where.settings, new_settings != settings), (where.mcp, ours)) if changes])
    if ours:
        rest = {k: v for k, v in servers.items() if k != SERVER}
        if rest:
            new_state["mcpServers"] = rest
        else:
            new_state.pop("mcpServers", None)
    changed = [str(p) for p, new, old in ((where.settings, new_settings, settings), (where.mcp, new_state, state))
               if _write(p, new, old)]
    return Change(scope, str(where.settings), str(where.mcp), removed, ours, tuple(changed))
