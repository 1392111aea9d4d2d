"""Teams of agents: propose, cite, cited-by, notices, sync."""
from __future__ import annotations

from typing import List, Optional

import typer

from memrepo import api
from memrepo.cli import call, params
from memrepo.cli.output import echo, out

app = typer.Typer()


@app.command(epilog=params.examples(
    "memrepo propose --agent analyst --subject user --fact ui.theme --summary dark --json",
    "memrepo propose --agent reviewer --kind knowledge --summary \"Retry flaky CI once\" --confidence 0.7"))
@params.takes_fields("propose")
def propose(fields: dict, given: List[str],
            body: Optional[str] = typer.Option(None, help="Markdown body (default: stdin when it is not a terminal)."),
            request_id: Optional[str] = params.REQUEST_ID,
            as_json: bool = params.JSON):
    """Propose a memory to the shared pool (layer L2 unless given): duplicates reinforce,
    conflicts go to arbitration; a shared fact needs --subject and --fact, shared knowledge
    (kind knowledge, pattern or principle) --confidence."""
    if body is None:
        body = call.stdin_text()
    with call.vault() as vault:
        result = api.propose(vault, fields, body, agent=call.state.agent, request_id=request_id)
        url = api.compare_url(vault, result.proposal) if result.proposal else None
    where = {"reinforced": f"reinforced {result.reinforced}", "written": f"wrote {result.id}",
             "superseded": f"wrote {result.id}, superseding {result.superseded} (policy {result.policy})",
             "proposed": f"{result.id} -> proposal {result.proposal} (review: memrepo review {result.proposal})"}[result.outcome]
    out({**result.as_dict(), **({"compare_url": url} if result.proposal else {})}, as_json,
        f"{result.outcome}: {where}" + (f"\n  {result.reason}" if result.reason else "")
        + (f"\n  pull request, once pushed ('memrepo proposals push {result.proposal}'): {url}" if url else ""))


@app.command("cite", epilog=params.examples("memrepo cite --by analyst --ref report-2026-12-01 mem_20261201_7k3p9x"))
def cite_(ids: List[str] = typer.Argument(..., metavar="ID...", help="Memory ids the output used."),
          by: str = typer.Option(..., "--by", help="The agent whose output cites them."),
          ref: str = typer.Option(..., "--ref", help="The output: a file, URL, message or run id."),
          as_json: bool = params.JSON):
    """Record that an agent output cites memories (committed under citations/, travels with sync)."""
    with call.vault() as vault:
        commit = api.cite(vault, ids, by=by, ref=ref)
    out({"by": by, "ref": ref, "ids": ids, "commit": commit}, as_json, f"recorded: {ref} by {by} cites {', '.join(ids)} ({commit[:12]})")


@app.command("cited-by", epilog=params.examples("memrepo cited-by mem_20261201_7k3p9x --json"))
def cited_by(memory_id: str = typer.Argument(..., metavar="ID"), as_json: bool = params.JSON):
    """The memories and recorded outputs that cite ID."""
    with call.vault() as vault:
        found = api.cited_by(vault, memory_id)
    out([c.as_dict() for c in found], as_json, "\n".join(c.label() for c in found) or f"nothing cites {memory_id}")


@app.command(epilog=params.examples("memrepo notices --agent analyst", "memrepo notices --ack 3f9a1c"))
def notices(ack: List[int] = typer.Option([], "--ack", help="Acknowledge notice N (repeatable): it is no longer listed."),
            as_json: bool = params.JSON):
    """Citing memories and outputs to re-evaluate because what they cite changed (with --agent: yours)."""
    with call.vault() as vault:
        if ack:
            commit = api.ack(vault, ack, agent=call.state.agent)
            out({"acknowledged": ack, "commit": commit}, as_json, f"acknowledged {', '.join(map(str, ack))} ({commit[:12]})")
            return
        found = api.notices(vault, agent=call.state.agent)
    out([n.as_dict() for n in found], as_json, "\n".join(n.text() for n in found) or "no notices")


@app.command(epilog=params.examples("memrepo sync", "memrepo sync --remote origin --json"))
def sync(remote: str = typer.Option("origin", "--remote", help="Git remote the team shares the vault through."),
         as_json: bool = params.JSON):
    """Share the vault through a git remote: fetch, merge by meaning, re-check, push (never forced)."""
    with call.vault() as vault:
        result = api.sync(vault, remote=remote)
    lines = [f"{remote}: integrated {result.integrated}; "
             + (f"pushed {(result.after or '')[:12]}" if result.pushed else "NOT pushed")
             + (f" after {result.attempts} attempts" if result.attempts > 1 else "")]
    lines += [f"  conflict proposal {p} (review: memrepo review {p})" for p in result.proposals]
    lines += [f"  proposal {p} was closed on another clone" for p in result.adopted]
    lines += [f"  deleted {b} on {remote}: the proposal is closed" for b in result.deleted]
    lines += [f"  not pushed {ref}: {why}" for ref, why in result.not_pushed.items()]
    lines += [f"  {n}" for n in result.notes]
    out(result.as_dict(), as_json, "\n".join(lines))
    if result.unreviewed and not as_json:
        echo(f"warning: {remote}'s commits brought {len(result.unreviewed)} change(s) past review "
             "(memrepo keeps the reviewed policy; 'memrepo validate' lists them):", err=True)
        for problem in result.unreviewed:
            echo(f"  {problem}", err=True)
    if not result.pushed:
        raise typer.Exit(1)
