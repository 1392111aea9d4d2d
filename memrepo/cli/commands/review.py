"""Review and rollback: proposals, review, apply, reject, rollback, why, history."""
from __future__ import annotations

import json
from typing import List, Optional

import typer

from memrepo import api
from memrepo.cli import call, output, params
from memrepo.cli.output import out

app = typer.Typer()
proposals_app = typer.Typer(help="List open review proposals, or push one for a pull request.",
                            invoke_without_command=True, rich_markup_mode=None,
                            epilog=params.examples("memrepo proposals", "memrepo proposals --all --json"))
app.add_typer(proposals_app, name="proposals")


@proposals_app.callback()
def proposals_list(ctx: typer.Context,
                   include_all: bool = typer.Option(False, "--all", help="Include applied and rejected proposals."),
                   as_json: bool = params.JSON):
    """List open proposals (with --all: applied and rejected too, with outcome and reason)."""
    if ctx.invoked_subcommand is not None:
        return
    with call.vault() as vault:
        found = api.list_proposals(vault, include_closed=include_all)
    rows = []
    for p in found:
        outcome = f" ({p.outcome.get('by')}: {p.outcome.get('reason', p.outcome.get('mode', ''))})" if p.outcome else ""
        if p.outcome.get("declined"):
            outcome += f"; declined: {p.outcome['declined']}"
        undone = p.outcome.get("reverted")
        status = f"{p.status}, {'rolled back' if undone['action'] == 'rollback' else 'reverted'} in {undone['commit'][:12]}" \
            if undone else p.status
        rows.append([p.id, status, ", ".join(p.ids), f"{p.reason}{outcome}"])
    text = output.table(["PROPOSAL", "STATUS", "MEMORIES", "REASON"], rows) if rows else ""
    out([p.as_dict() for p in found], as_json, text or ("no proposals" if include_all else "no open proposals"))


@proposals_app.command("push", epilog=params.examples("memrepo proposals push prop_20261201_ab12cd --remote origin"))
def proposals_push(proposal_id: str = typer.Argument(..., metavar="ID"),
                   remote: str = typer.Option("origin", help="Git remote to push to."), as_json: bool = params.JSON):
    """Push a proposal branch so the team can open a pull request (never forced)."""
    with call.vault() as vault:
        branch = api.push_proposal(vault, proposal_id, remote=remote)
        url = api.compare_url(vault, proposal_id, remote=remote)
    out({"proposal": proposal_id, "branch": branch, "remote": remote, "compare_url": url}, as_json,
        f"pushed {branch} to {remote}: open a pull request from it; merging it applies the proposal"
        + (f"\n  pull request: {url}" if url else ""))


@app.command(epilog=params.examples("memrepo review prop_20261201_ab12cd"))
def review(proposal_id: str = typer.Argument(..., metavar="ID", help="Proposal id (or the id of a memory it carries)."),
           markdown: bool = typer.Option(False, "--markdown", help="Print the card and the field-aware diff as markdown (a pull request description)."),
           as_json: bool = params.JSON):
    """Show a proposal's review card: who, what it supersedes, evidence, effects, rollback point."""
    if markdown:
        with call.vault() as vault:
            text = api.review_markdown(vault, proposal_id)
        out({"proposal": proposal_id, "markdown": text}, as_json, text.rstrip("\n"))
        return
    with call.vault() as vault:
        p = api.get_proposal(vault, proposal_id)
        text = api.card(vault, proposal_id)
        data = {**p.as_dict(), "card": text, "memories_detail": [
            {**dict(m.meta), "path": m.path, "body": m.body} for m in api.memories_of(vault, p)]}
        if p.status == "open":  # what applying it does to recall: the check delta
            checks = api.proposal_checks(vault, p.id)
            text, data["checks"] = text.rstrip("\n") + "\n" + "\n".join(checks.card_lines()) + "\n", checks.as_dict()
    out(data, as_json, text)


@app.command(epilog=params.examples("memrepo apply prop_20261201_ab12cd",
                                    "memrepo apply prop_20261201_ab12cd --only mem_a --mode append"))
def apply(proposal_id: str = typer.Argument(..., metavar="ID"),
          mode: str = typer.Option("overwrite", help="overwrite: supersede the old version; append: keep both when they do not conflict."),
          only: List[str] = typer.Option([], "--only", help="Apply just this memory of a multi-memory proposal (repeatable); the rest are declined."),
          accept_regression: Optional[str] = typer.Option(None, "--accept-regression", metavar="REASON", help="Apply although recall checks regress; the reason is recorded in the apply commit."),
          why: str = typer.Option("", "--why", help="Why it is approved (optional; recorded in the apply commit, shown by 'proposals --all')."),
          as_json: bool = params.JSON):
    """Apply a proposal: the recall checks first (a regression refuses, exit 4), then one merge commit on main."""
    with call.vault() as vault:
        commit = api.apply(vault, proposal_id, mode=mode, only=only or None, accept_regression=accept_regression,
                           why=why)
        remote = api.delete_pushed_branches(vault, ids=[api.get_proposal(vault, proposal_id).id])
    out({"proposal": proposal_id, "commit": commit, "mode": mode, "remote_branches": remote}, as_json,
        f"applied {proposal_id} ({mode}) in {commit[:12]}; undo with 'git revert -m 1 {commit[:12]}'"
        + _remote_lines(remote))


def _remote_lines(remote: dict[str, str]) -> str:
    """What happened to a closed proposal's branch on the remotes it was pushed to."""
    return "".join(f"\n  deleted branch {b}" if outcome == "ok" else f"\n  kept branch {b}: {outcome}"
                   for b, outcome in remote.items())


@app.command(epilog=params.examples("memrepo reject prop_20261201_ab12cd --why \"contradicts the release policy\""))
def reject(proposal_id: str = typer.Argument(..., metavar="ID"),
           why: str = typer.Option(..., "--why", help="Why it is rejected (recorded)."),
           as_json: bool = params.JSON):
    """Reject a proposal: it leaves the queue; its history stays under refs/memrepo/rejected/."""
    with call.vault() as vault:
        commit = api.reject(vault, proposal_id, why=why)
        remote = api.delete_pushed_branches(vault, ids=[api.get_proposal(vault, proposal_id).id])
    out({"proposal": proposal_id, "commit": commit, "remote_branches": remote}, as_json,
        f"rejected {proposal_id} (recorded in {commit[:12]})" + _remote_lines(remote))


@app.command(epilog=params.examples("memrepo rollback mem_20261201_7k3p9x --why \"wrong threshold\""))
def rollback(memory_id: str = typer.Argument(..., metavar="ID"),
             why: str = typer.Option("", "--why", help="Reason, recorded in the commit."),
             as_json: bool = params.JSON):
    """Undo the commit that made a memory active (a revert; history is never rewritten)."""
    with call.vault() as vault:
        commit = api.rollback(vault, memory_id, reason=why)
    out({"id": memory_id, "commit": commit}, as_json, f"rolled back {memory_id} in {commit[:12]}")


@app.command(epilog=params.examples("memrepo why mem_20261201_7k3p9x"))
def why(memory_id: str = typer.Argument(..., metavar="ID"), as_json: bool = params.JSON):
    """Why is this memory active? Who wrote it, which proposal, who applied it, what it superseded."""
    with call.vault() as vault:
        data = api.why(vault, memory_id).as_dict()
    text = "\n".join(f"{k}: {json.dumps(v, ensure_ascii=False) if isinstance(v, dict | list) else v}"
                     for k, v in data.items())
    out(data, as_json, text)


@app.command(epilog=params.examples("memrepo history project-alpha db.pool", "memrepo history mem_20261201_7k3p9x"))
def history(subject: str = typer.Argument(..., metavar="SUBJECT|ID", help="The fact's subject, or the id of one memory."),
            fact: Optional[str] = typer.Argument(None, metavar="[FACT]", help="The fact key (without it: SUBJECT is a memory id)."),
            as_json: bool = params.JSON):
    """Every version of a fact (or of one memory) that ever existed on main, oldest first, with its status."""
    with call.vault() as vault:
        versions = api.fact_history(vault, subject, fact) if fact is not None else api.memory_history(vault, subject)
    rows = [v.as_dict() for v in versions]
    text = output.table(["DATE", "COMMIT", "ID", "STATUS", "SUMMARY"],
                        [[v.date, v.commit[:12], v.id, v.status or "deleted", f"{v.summary or ''}  ({v.message})"]
                         for v in versions]) if versions else ""
    out(rows, as_json, text or (f"no versions of ({subject}, {fact})" if fact is not None else f"no versions of {subject}"))
