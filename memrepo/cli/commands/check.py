"""Recall checks (memory CI): ``check add``, ``list``, ``run`` and the forge ``workflow``.

Glue only: each command calls one :mod:`memrepo.api` function and renders what it returns.
``check run`` exits 1 when a check that passes on the base fails on the version checked (or,
without a base, when any check fails), so a CI job fails on a regression.
"""
from __future__ import annotations

from typing import Any, List, Optional

import typer

from memrepo import api
from memrepo.cli import call, params
from memrepo.cli.output import echo, out, table
from memrepo.errors import UsageError

JsonOpt = params.JSON
_examples = params.examples
vault = call.vault

app = typer.Typer()
check_app = typer.Typer(help="Recall checks: questions the agent must still answer from memory after a change (memory CI).",
                        rich_markup_mode=None, no_args_is_help=True,
                        epilog=_examples("memrepo check add \"can we auto publish releases?\" --expect mem_20261201_7k3p9x",
                                         "memrepo check run --ref prop_20261201_ab12cd"))
app.add_typer(check_app, name="check")


@check_app.command("add", epilog=_examples(
    "memrepo check add \"can we auto publish releases?\" --expect mem_20261201_7k3p9x --top 3",
    "memrepo check add \"发布流程\" --expect mem_20261201_7k3p9x --by-fact --must-not mem_20261120_old0ne"))
def check_add(question: str = typer.Argument(..., metavar="QUESTION", help="What the agent will be asked (any language)."),
              expect: Optional[str] = typer.Option(None, "--expect", metavar="ID", help="The memory the question must find."),
              top: int = typer.Option(5, "--top", metavar="N", help="The rank it must reach (default 5)."),
              by_fact: bool = typer.Option(False, "--by-fact", help="Expect the --expect memory's subject and fact key, so the check follows the fact through supersedes."),
              must_not: List[str] = typer.Option([], "--must-not", metavar="ID", help="A memory that must not be in the top N (repeatable): a rolled-back or rejected fact."),
              intent: Optional[str] = typer.Option(None, "--intent", help="Retrieval route, as search --intent: fact, general, howto or history."),
              check_id: Optional[str] = typer.Option(None, "--id", help="The check's id (default: generated)."),
              file: str = typer.Option("checks/recall.yaml", "--file", help="The checks file to add it to (under checks/)."),
              as_json: bool = JsonOpt):
    """Add a recall check (one commit on main) and say whether it passes now."""
    with vault() as v:
        added = api.add_check(v, question, expect=expect, top=top, by_fact=by_fact, must_not=must_not, intent=intent,
                              check_id=check_id, file=file)
    data = added.as_dict()
    now = (f"passes now (rank {data['rank']})" if data["passes"] else
           f"FAILS now (rank {data['rank'] or '-'}, needs the top {top})")
    out(data, as_json, f"added check {added.check.id} to {file} in {added.commit[:12]}; {now}")


@check_app.command("list", epilog=_examples("memrepo check list", "memrepo check list --ref proposal/prop_20261201_ab12cd --json"))
def check_list(ref: Optional[str] = typer.Option(None, "--ref", help="Version to read them from: a commit, branch or proposal (default: main)."),
               as_json: bool = JsonOpt):
    """List the recall checks: id, question, expected memory, rank to reach, file and line."""
    with vault() as v:
        checks = api.list_checks(v, ref)
    rows = [[c.name, c.expect_label(), str(c.top), f"{c.file}:{c.line}", c.question] for c in checks]
    out([c.as_dict() for c in checks], as_json,
        table(["CHECK", "EXPECT", "TOP", "WHERE", "QUESTION"], rows) if rows else
        "no recall checks (add one: memrepo check add QUESTION --expect ID)")


@check_app.command("run", epilog=_examples("memrepo check run", "memrepo check run --ref HEAD --against origin/main",
                                           "memrepo check run --ref prop_20261201_ab12cd --json"))
def check_run(ref: str = typer.Option("HEAD", "--ref", help="Version to check: a commit, branch or proposal (a proposal as main would be after apply)."),
              against: Optional[str] = typer.Option(None, "--against", help="Compare with this version (default for a proposal: main); exit 1 only for checks that pass there and fail on --ref."),
              as_json: bool = JsonOpt):
    """Run the recall checks on a version of the vault (and a base): exit 0 nothing regressed, 1 a check regressed."""
    with vault() as v:
        run = api.run_checks(v, ref, against=against)
    if run.semantic in ("building", "unavailable") and not as_json:
        echo(f"notice: semantic search {run.semantic}: the checks ranked by keywords only", err=True)
    out(run.as_dict(), as_json, _run_text(run))
    raise typer.Exit(0 if run.ok else 1)


def _run_text(run: Any) -> str:
    if not run.results:
        return "no recall checks in " + run.label() + " (add one: memrepo check add QUESTION --expect ID)"
    if run.against:
        head = ["CHECK", "RESULT", f"BEFORE ({run.against})", "AFTER", "EXPECT", "QUESTION"]
        rows = [[r.check.name, r.status, _rank(r.before, r.check), _rank(r.after, r.check), _expect(r.check), r.check.question]
                for r in run.results]
    else:
        head = ["CHECK", "RESULT", "RANK", "EXPECT", "QUESTION"]
        rows = [[r.check.name, r.status, _rank(r.after, r.check), _expect(r.check), r.check.question] for r in run.results]
    lines = [table(head, rows)]
    lines += [f"removed: {c.name} {c.question!r} (only {run.against} has it; not run)" for c in run.removed]
    regressed = f", {len(run.regressions)} regressed: {', '.join(r.check.name for r in run.regressions)}" if run.regressions else ""
    lines.append(f"{run.label()}: {run.summary()} passed{regressed}")
    return "\n".join(lines)


def _rank(outcome: Any, check: Any) -> str:
    return outcome.text(expects=bool(check.expect_id or check.expect_fact)) if outcome else ""


def _expect(check: Any) -> str:
    return (f"{check.expect_label()} top {check.top}" if check.expect_id or check.expect_fact else
            f"not {', '.join(check.must_not)} in top {check.top}")


@check_app.command("workflow", epilog=_examples("memrepo check workflow --github", "memrepo check workflow --gitlab --print"))
def check_workflow(github: bool = typer.Option(False, "--github", help="GitHub Actions (also Gitea): .github/workflows/memrepo.yml."),
                   gitlab: bool = typer.Option(False, "--gitlab", help="GitLab CI: .gitlab-ci.yml."),
                   show: bool = typer.Option(False, "--print", help="Print the file instead of committing it."),
                   as_json: bool = JsonOpt):
    """Commit a forge workflow that validates the vault and runs the recall checks on every pull request."""
    if github == gitlab:
        raise UsageError("give one of --github or --gitlab")
    forge = "github" if github else "gitlab"
    path, text = api.workflow_text(forge)
    if show:
        out({"path": path, "text": text}, as_json, text.rstrip("\n"))
        return
    with vault() as v:
        path, commit = api.write_workflow(v, forge)
    out({"path": path, "text": text, "commit": commit}, as_json,
        f"wrote {path} in {commit[:12]}; push the vault to run it on pull requests" if commit else f"{path} is already there")
