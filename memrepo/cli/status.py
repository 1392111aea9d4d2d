"""``memrepo status``: where the vault's search stands — the keyword index and the semantic
vectors (building: how many of how many, and how long is left). Glue over :func:`memrepo.api.status`."""
from __future__ import annotations

import typer

from memrepo.cli import commands

JsonOpt = typer.Option(False, "--json", help="Print JSON instead of text (errors too: {\"error\": ...} on stdout).")


def status(as_json: bool = JsonOpt):
    """Show the search index and the semantic vectors: at HEAD or behind, and a build's
    progress (N of M memories, time left) while one runs in the background."""
    from memrepo import api
    with commands.vault() as vault:
        found = api.status(vault)
    commands.out(found, as_json, render(found))


def render(found: dict) -> str:
    """The status as a few lines of text."""
    head = found["head"]
    index = found["index"]
    lines = [f"vault     {found['vault']}" + (f" (HEAD {head[:12]})" if head else " (no commit yet)")]
    if index["commit"] is None:
        lines.append("keywords  none yet: the next search builds the index")
    else:
        count = f"{index['memories']:,} memories" if index["memories"] is not None else "unreadable"
        lines.append(f"keywords  {count}, " + ("at HEAD" if index["current"] else
                                               f"at {index['commit'][:12]}: the next search catches up"))
    lines.append(f"semantic  {semantic_line(found['semantic'], found['vectors'])}")
    return "\n".join(lines)


def semantic_line(state: str, v: dict) -> str:
    if state in ("building", "interrupted") and v.get("total"):
        share = f"{v['ready']:,} of {v['total']:,} memories, {100 * v['ready'] // max(v['total'], 1)} %"
        if state == "interrupted":
            return (f"interrupted at {share}: the next search or memrepo reindex --wait resumes it "
                    "from the vectors it kept")
        eta = v.get("eta_s")
        left = ", writing the vectors" if v.get("state") == "writing" else \
            f", about {_duration(eta)} left" if eta is not None else ""
        return f"building ({share}){left}"
    if state == "building":
        return "building: starting"
    if state == "hybrid":
        count = f"{v['count']:,} vectors" if v.get("count") is not None else "vectors"
        return f"hybrid: {count}, " + ("at HEAD" if v.get("current") else "the next search catches up")
    if state == "none":
        return "none yet: the next search builds the vectors"
    if state == "unavailable":
        return f"unavailable ({v.get('reason')})"
    return "off ([search] semantic = false, or MEMREPO_SEMANTIC=0)"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def register(app: typer.Typer) -> None:
    app.command("status")(status)
