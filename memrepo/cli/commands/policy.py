"""The review policy: ``policy`` (what is in force, what lowers it without review) and
``policy accept`` (a person accepting a change)."""
from __future__ import annotations

import typer

from memrepo import api
from memrepo.cli import call, params
from memrepo.cli.output import out

app = typer.Typer()
policy_app = typer.Typer(help="The review policy ([risk], [arbitration]): what is in force, what lowers it "
                              "without review, and accepting a change.", invoke_without_command=True,
                         rich_markup_mode=None, epilog=params.examples("memrepo policy", "memrepo policy --json"))
app.add_typer(policy_app, name="policy")


@policy_app.callback()
def policy_show(ctx: typer.Context, as_json: bool = params.JSON):
    """Show the policy in force, every key lowered without review, and who accepted changes."""
    if ctx.invoked_subcommand is not None:
        return
    with call.vault() as vault:
        found = api.policy_report(vault)
    lines = []
    for table in ("risk", "arbitration"):
        section = found.effective.section(table)
        lines += [f"[{table}]"] + [f"{k} = {section[k]!r}" for k in section
                                   if table == "risk" or k in ("default", "authority", "rules")]
    lines += [f"pending: {p.problem()}" for p in found.pending] or ["pending: nothing (the file is the policy in force)"]
    lines += [f"note: {a}" for a in found.accepted]
    out(found.as_dict(), as_json, "\n".join(lines))


@policy_app.command("accept", epilog=params.examples(
    "memrepo policy accept --why \"constraints are reviewed in the pull request\""))
def policy_accept(why: str = typer.Option(..., "--why", help="Why the policy changes (recorded with your name)."),
                  as_json: bool = params.JSON):
    """Accept .memrepo/config.toml as it stands: commit it if it changed and record the review."""
    with call.vault() as vault:
        result = api.accept_policy(vault, why=why)
    lowered = "; ".join(f"{k}: {w}" for k, w in result.lowered) or "nothing lowered"
    out(result.as_dict(), as_json, f"accepted the review policy in {result.commit[:12]} ({lowered})")
