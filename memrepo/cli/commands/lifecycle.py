"""The memory lifecycle: distill, decay, cleanup, graph, nightly, schedule."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from memrepo import api
from memrepo.cli import call, output, params
from memrepo.cli.output import echo, out

app = typer.Typer()


@app.command(epilog=params.examples("memrepo distill --dry-run", "memrepo distill --promote --now 2026-12-01"))
def distill(now: Optional[str] = params.NOW,
            promote: bool = typer.Option(False, "--promote", help="Promote recurring L2 patterns to L3 candidates instead."),
            dry_run: bool = typer.Option(False, "--dry-run", help="Show the candidates; create no proposal."),
            explain: bool = typer.Option(False, "--explain", help="Also say why near-miss groups were dropped."),
            as_json: bool = params.JSON):
    """Nightly distill: one speaker's L1 entries recurring on 3+ days (small talk left out) become L2 candidates."""
    with call.vault() as vault:
        report = api.distill(vault, now=now, promote=promote, dry_run=dry_run, explain=explain,
                             progress=output.progress("distill"))
    lines = [f"{c['id']}: {c['summary']} ({c['occurrences']}x: {', '.join(c['members'])})" for c in report.candidates]
    if explain:
        lines += [f"  kept {c['id']} (score {c['score']}): {c['why']}" for c in report.candidates]
        lines += [f"dropped ({n['days']} days{', ' + n['speaker'].title() if n['speaker'] else ''}): {n['reason']}: "
                  f"{n['example']} ({', '.join(n['members'][:3])}, …)"
                  for n in report.near_misses]
    lines += [f"capped (waits for the next run): {c['id']}: {c['summary']}" for c in report.capped]
    lines += [f"reinforced {r['pattern']} with {', '.join(r['new_members'])}" for r in report.reinforcements]
    lines += [f"skipped {s['id']}: {s['reason']}" for s in report.skipped]
    if report.small_talk:
        lines.append(f"left out {report.small_talk} entries: small talk, or nothing of the speaker's own")
    if report.proposal:
        lines.append(f"proposal {report.proposal}: review with 'memrepo review {report.proposal}'")
    lines += [f"check candidate {c['name']}: {c['question']!r} must find {c['expect']} ({c['why']})" for c in report.check_candidates]
    if report.check_proposal:
        lines.append(f"proposal {report.check_proposal} (recall checks): review with 'memrepo review {report.check_proposal}'")
    out(report.as_dict(), as_json, "\n".join(lines) or f"no new patterns among {report.considered} entries")


@app.command(epilog=params.examples("memrepo decay --dry-run"))
def decay(now: Optional[str] = params.NOW,
          dry_run: bool = typer.Option(False, "--dry-run", help="Show who would be archived and why; change nothing."),
          as_json: bool = params.JSON):
    """Influence decay: archive cold memories (keystones protected); propose deleting dead ones."""
    with call.vault() as vault:
        report = api.decay(vault, now=now, dry_run=dry_run, progress=output.progress("decay"))
    lines = [f"{d['id']}: {d['action']}{' + delete candidate' if d['delete_candidate'] else ''} "
             f"({d['reason']})" for d in report.decisions if d["action"] != "keep"]
    if report.commit:
        lines.append(f"archived {len(report.archived)} in {report.commit[:12]} (git revert it to undo)")
    if report.proposal:
        lines.append(f"deletion candidates on proposal {report.proposal}")
    out(report.as_dict(), as_json, "\n".join(lines) or "nothing to archive")


@app.command(epilog=params.examples("memrepo cleanup --dry-run"))
def cleanup(now: Optional[str] = params.NOW,
            dry_run: bool = typer.Option(False, "--dry-run", help="Say what would be archived or demoted; change nothing."),
            as_json: bool = params.JSON):
    """Monthly clean-up: expired memories are demoted to L1 or archived."""
    with call.vault() as vault:
        report = api.cleanup(vault, now=now, dry_run=dry_run)
    would = {"archive": "would archive", "demote": "would demote to L1", "delete": "would delete"}
    out(report.as_dict(), as_json, "\n".join(f"{a['id']}: {would.get(a['action'], 'would ' + a['action']) if dry_run else a['action']}"
                                             f" ({a['reason']})" for a in report.actions) or "nothing expired")


@app.command(epilog=params.examples("memrepo graph mem_20261201_7k3p9x", "memrepo graph --export graph.graphml"))
def graph(memory_id: Optional[str] = typer.Argument(None, metavar="[ID]", help="Show this memory's neighbours."),
          export: Optional[Path] = typer.Option(None, "--export", help="Write the whole graph to FILE."),
          fmt: Optional[str] = typer.Option(None, "--format", help="graphml or dot (default: from the file name)."),
          as_json: bool = params.JSON):
    """The memory graph: links, [[wikilinks]], supersedes and co-recall, with strengths."""
    if memory_id is None and export is None:
        raise typer.BadParameter("give an ID or --export FILE")
    with call.vault() as vault:
        g, _ = api.build_graph(vault)
        if memory_id is not None:
            vault.get(memory_id)
    if export is not None:
        kind = g.export(export, fmt)
        echo(f"wrote {len(g.nodes)} memories and {len(g.edges)} edges to {export} ({kind})", err=as_json)
    if memory_id is not None:
        rows = [{"id": n.id, "direction": n.direction, "kind": n.kind, "strength": n.strength} for n in g.neighbours(memory_id)]
        out(rows, as_json, "\n".join(f"{'<-' if r['direction'] == 'in' else '->'} {r['id']} ({r['kind']}, {r['strength']:.2f})"
                                    for r in rows) or f"{memory_id} has no neighbours")


@app.command(epilog=params.examples("memrepo nightly", "memrepo nightly --quiet --json"))
def nightly(now: Optional[str] = params.NOW, quiet: bool = typer.Option(False, "--quiet", help="Print only when something changed."),
            as_json: bool = params.JSON):
    """The nightly job: distill + promote + decay + clean-up + index maintenance, logged."""
    with call.vault() as vault:
        result = api.nightly(vault, now=now)
    if quiet and not result["changed"]:
        return
    out(result, as_json, _nightly_summary(result))


def _nightly_summary(result: dict) -> str:
    """A few lines a person reads in the morning (the run log stays JSON, and --json prints it)."""
    def part(name: str, verb: str) -> str:
        r = result.get(name) or {}
        if r.get("skipped") and isinstance(r["skipped"], str):
            return f"{name}: skipped ({r['skipped']})"
        counts = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in r.items()
                           if isinstance(n, int) and not isinstance(n, bool))
        where = (f"; review: memrepo review {r['proposal']}" if r.get("proposal") else "") + \
                (f"; recall checks: memrepo review {r['check_proposal']}" if r.get("check_proposal") else "") + \
                (f"; commit {str(r['commit'])[:12]}" if r.get("commit") else "")
        return f"{name}: {counts or 'nothing to ' + verb}{where}"
    index = result.get("index") or {}
    lines = [f"nightly run at {result.get('now')}: {'changes made' if result.get('changed') else 'nothing changed'}",
             "  " + part("distill", "distill"), "  " + part("promote", "promote"), "  " + part("decay", "archive"),
             "  " + part("cleanup", "clean up"),
             "  index: " + ("rebuilt" if index.get("rebuilt") else f"{index.get('updated', 0)} updated, {index.get('deleted', 0)} removed")]
    return "\n".join(lines)


@app.command(epilog=params.examples("memrepo schedule", "memrepo schedule --kind systemd --at 02:30 --install"))
def schedule(install: bool = typer.Option(False, "--install", help="Write it for the current user."),
             timer: str = typer.Option("cron", "--kind", help="cron or systemd (user timer)."),
             at: str = typer.Option("03:17", "--at", help="Time of day, HH:MM."),
             as_json: bool = params.JSON):
    """Print (or --install) a cron entry or systemd user timer running the nightly job."""
    with call.vault() as vault:
        if install:
            for line in api.install_schedule(vault, kind=timer, at=at):
                echo(line)
            return
        files = api.schedule_text(vault, kind=timer, at=at)
    out(files, as_json, "\n".join(f"# {name}\n{text}" if timer == "systemd" else text for name, text in files.items()))
