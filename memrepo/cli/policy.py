"""``memrepo policy``: the review policy in force, what lowers it without review, and a person
accepting a change (library: :mod:`memrepo.review.policy`)."""
from __future__ import annotations

import typer

from memrepo.cli.commands import out, vault

policy_app = typer.Typer(help="The review policy ([risk], [arbitration]): what is in force, what lowers it "
                              "without review, and accepting a change.", invoke_without_command=True,
                         rich_markup_mode=None)
JsonOpt = typer.Option(False, "--json", help="Print JSON instead of text (errors too: {\"error\": ...} on stdout).")


@policy_app.callback()
def policy_show(ctx: typer.Context, as_json: bool = JsonOpt):
    """Show the policy in force, every key lowered without review, and who accepted changes."""
    if ctx.invoked_subcommand is not None:
        return
    from memrepo.review import policy
    with vault() as v:
        found = policy.report(v)
    lines = []
    for table in ("risk", "arbitration"):
        section = found.effective.section(table)
        lines += [f"[{table}]"] + [f"{k} = {section[k]!r}" for k in section
                                   if table == "risk" or k in ("default", "authority", "rules")]
    lines += [f"pending: {p.problem()}" for p in found.pending] or ["pending: nothing (the file is the policy in force)"]
    lines += [f"note: {a}" for a in found.accepted]
    out(found.as_dict(), as_json, "\n".join(lines))


@policy_app.command("accept")
def policy_accept(why: str = typer.Option(..., "--why", help="Why the policy changes (recorded with your name)."),
                  as_json: bool = JsonOpt):
    """Accept .memrepo/config.toml as it stands: commit it if it changed and record the review."""
    from memrepo.review import policy
    with vault() as v:
        result = policy.accept(v, why=why)
    lowered = "; ".join(f"{k}: {w}" for k, w in result.lowered) or "nothing lowered"
    out(result.as_dict(), as_json, f"accepted the review policy in {result.commit[:12]} ({lowered})")
