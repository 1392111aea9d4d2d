"""Scheduling the nightly run: a crontab line or systemd user units for ``memrepo nightly``."""
from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from memrepo.errors import UsageError
from memrepo.model import check_choice
from memrepo.store import processes
from memrepo.store.vault import Vault

SCHEDULE_KINDS = ("cron", "systemd")


def schedule_text(vault: Vault, *, kind: str = "cron", at: str = "03:17") -> dict[str, str]:
    """The cron line or systemd user units that run ``memrepo nightly`` on this vault."""
    check_choice("kind", kind, SCHEDULE_KINDS)
    try:
        hour, minute = (int(x) for x in at.split(":"))
        assert 0 <= hour < 24 and 0 <= minute < 60
    except (ValueError, AssertionError):
        raise UsageError(f"--at {at!r}: use HH:MM (24-hour)") from None
    command = f"{shlex.quote(sys.executable)} -m memrepo --vault {shlex.quote(str(vault.root))} nightly --quiet"
    log = shlex.quote(str(vault.state_dir / "nightly.out"))
    if kind == "cron":
        return {"crontab": f"{minute} {hour} * * * {command} >> {log} 2>&1  # memrepo nightly {vault.root}"}
    if kind == "systemd":
        name = _unit_name(vault)
        service = (f"[Unit]\nDescription=memrepo nightly maintenance of {vault.root}\n\n[Service]\nType=oneshot\n"
                   f"ExecStart={command}\n")
        timer = (f"[Unit]\nDescription=Run {name}.service every night\n\n[Timer]\nOnCalendar=*-*-* {hour:02d}:{minute:02d}:00\n"
                 f"Persistent=true\n\n[Install]\nWantedBy=timers.target\n")
        return {f"{name}.service": service, f"{name}.timer": timer}
    raise AssertionError(kind)


def _unit_name(vault: Vault) -> str:
    import hashlib  # here: every command line imports this module through memrepo.api
    return "memrepo-nightly-" + hashlib.sha1(str(vault.root).encode()).hexdigest()[:8]


def install_schedule(vault: Vault, *, kind: str = "cron", at: str = "03:17") -> list[str]:
    """Install for the current user: a crontab line (kept once) or systemd user units."""
    files = schedule_text(vault, kind=kind, at=at)
    if kind == "systemd":
        base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "systemd" / "user"
        base.mkdir(parents=True, exist_ok=True)
        written = []
        for name, text in files.items():
            (base / name).write_text(text, encoding="utf-8")
            written.append(str(base / name))
        unit = _unit_name(vault)
        return written + [f"enable it with: systemctl --user daemon-reload && systemctl --user enable --now {unit}.timer"]
    line = files["crontab"]
    try:
        current = processes.run("crontab", "-l")
    except FileNotFoundError:
        raise UsageError("no 'crontab' command on this machine; use --kind systemd") from None
    existing = current.stdout if current.returncode == 0 else ""
    marker = f"# memrepo nightly {vault.root}"
    kept = [ln for ln in existing.splitlines() if not ln.endswith(marker)]
    new = "\n".join(kept + [line]) + "\n"
    proc = processes.run("crontab", "-", input=new)
    if proc.returncode != 0:
        raise UsageError(f"crontab refused the entry: {proc.stderr.strip()}")
    return [f"installed in your crontab: {line}"]
