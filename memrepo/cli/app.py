"""The ``memrepo`` command line: parse, call one library function, render (owner of typer).

Library modules are imported inside the commands so that a command pays only for what it
uses: agents call ``memrepo search`` on every turn, and start-up time is part of that call.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Optional

import typer
from typer.core import TyperGroup

from memrepo.cli import claude, commands
from memrepo.cli.check import check_app
from memrepo.cli.commands import CHECKED_PARAMS, state
from memrepo.cli.output import hoist_globals

# Global options taking a value, accepted before or after the sub-command (as --json is).
GLOBAL_OPTIONS = ("--vault", "--agent")

EXIT_CODES_HELP = (
    "Exit codes: 0 ok; 1 a check found problems (validate, hooks), a recall check regressed (check run) or git failed; 2 usage error; "
    "3 not found; 4 conflict (stale proposal, already applied); 5 invalid data "
    "(a memory, import line or file); 75 busy, nothing written, retry later (lock wait: lock_timeout in config.toml "
    "or MEMREPO_LOCK_TIMEOUT; --request-id makes a retry safe). --vault and --json may stand before or after the command; with "
    "--json an error is {\"error\": {\"code\", \"message\", \"problems\"}} on stdout."
)


class MemrepoGroup(TyperGroup):
    """The one place where failures become messages and exit codes (memrepo.errors names them).

    Every command, whoever adds it, gets this without code of its own: a ``MemrepoError`` is
    one line on stderr (or, with ``--json``, ``{"error": ...}`` on stdout) and its exit code;
    a usage error exits 2. ``--vault`` and ``--json`` may stand anywhere on the line."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        code = self.run(list(sys.argv[1:] if args is None else args), prog_name or "memrepo", complete_var, **extra)
        if standalone_mode:
            sys.exit(code)
        return code

    def run(self, args: list[str], prog_name: str, complete_var, **extra) -> int:
        from memrepo.cli import output
        from memrepo.errors import MemrepoError
        as_json, front, rest = hoist_globals(args, GLOBAL_OPTIONS)
        state.json, state.vault_path, state.agent = as_json, None, None
        path_end, command = self.resolve(rest)
        if command is not self:
            strict_options(command)
            path = " ".join(a for a in rest[:path_end] if not a.startswith("-"))
            command.epilog = command.epilog or examples_epilog(path)
        takes_json = command is not self and any("--json" in getattr(p, "opts", ()) for p in command.params)
        argv = front + rest[:path_end] + (["--json"] if as_json and takes_json else []) + rest[path_end:]
        output.show_warnings()
        try:
            rv = super().main(args=argv, prog_name=prog_name, complete_var=complete_var,
                              standalone_mode=False, **extra)
        except MemrepoError as e:
            return output.report_error(e, as_json=state.json)
        except typer.Exit as e:
            return e.exit_code
        except (typer.Abort, KeyboardInterrupt):
            if not state.json:
                typer.echo("aborted", err=True)
            return 130
        except OSError as e:
            return output.report_os_error(e, as_json=state.json)
        except Exception as e:  # typer's usage errors (bad option, missing argument, BadParameter)
            if hasattr(e, "format_message") and hasattr(e, "exit_code"):
                return output.report_usage(e, as_json=state.json)
            raise
        return rv if isinstance(rv, int) else 0

    def resolve(self, rest: list[str]):
        """Where the command path ends in ``rest`` and the command it names (self if none)."""
        path_end, command = 0, self
        for i, arg in enumerate(rest):
            if arg.startswith("-"):
                continue
            found = getattr(command, "commands", {}).get(arg)
            if found is None:
                break
            path_end, command = i + 1, found
            if not hasattr(found, "commands"):
                break
        return path_end, command


# The end of each command's --help: one or two examples (a test requires one for every command).
EXAMPLES: dict[str, str] = {
    "propose": "memrepo propose --agent analyst --subject user --fact ui.theme --summary dark --json\n"
               "memrepo propose --agent reviewer --kind knowledge --summary \"Retry flaky CI once\" --confidence 0.7",
    "cite": "memrepo cite --by analyst --ref report-2026-12-01 mem_20261201_7k3p9x",
    "cited-by": "memrepo cited-by mem_20261201_7k3p9x --json",
    "notices": "memrepo notices --agent analyst\nmemrepo notices --ack 3f9a1c",
    "sync": "memrepo sync\nmemrepo sync --remote origin --json",
    "init": "memrepo init ~/agent-memory",
    "add": "memrepo add --subject project-alpha --kind decision --summary \"Ship 2.3 after the migration\" --body \"...\"\n"
           "echo \"body\" | memrepo add --subject user --kind preference --summary \"Short answers\" --json",
    "show": "memrepo show mem_20261201_7k3p9x\nmemrepo show mem_20261201_7k3p9x --json",
    "list": "memrepo list --layer L2 --status active\nmemrepo list --subject user --json",
    "log": "memrepo log mem_20261201_7k3p9x",
    "validate": "memrepo validate\nmemrepo validate memories/L2 --json",
    "import": "memrepo import memories.jsonl --skip-invalid\nmemrepo import ~/notes --propose\n"
              "memrepo import --from claude-code ~/code/project\nmemrepo import --from mcp-memory memory.jsonl",
    "proposals": "memrepo proposals\nmemrepo proposals --all --json",
    "proposals push": "memrepo proposals push prop_20261201_ab12cd --remote origin",
    "review": "memrepo review prop_20261201_ab12cd",
    "apply": "memrepo apply prop_20261201_ab12cd\nmemrepo apply prop_20261201_ab12cd --only mem_a --mode append",
    "reject": "memrepo reject prop_20261201_ab12cd --why \"contradicts the release policy\"",
    "rollback": "memrepo rollback mem_20261201_7k3p9x --why \"wrong threshold\"",
    "why": "memrepo why mem_20261201_7k3p9x",
    "history": "memrepo history project-alpha db.pool",
    "search": "memrepo search \"database pool size\" --subject project-alpha\nmemrepo search 数据库 --layer L2 --since 2026-11-01 --json",
    "reindex": "memrepo reindex",
    "recover": "memrepo recover\nmemrepo recover --json",
    "useful": "memrepo useful mem_20261201_7k3p9x --session s-42",
    "distill": "memrepo distill --dry-run\nmemrepo distill --promote --now 2026-12-01",
    "decay": "memrepo decay --dry-run",
    "cleanup": "memrepo cleanup --dry-run",
    "graph": "memrepo graph mem_20261201_7k3p9x\nmemrepo graph --export graph.graphml",
    "nightly": "memrepo nightly\nmemrepo nightly --quiet --json",
    "schedule": "memrepo schedule\nmemrepo schedule --kind systemd --at 02:30 --install",
    "hooks": "memrepo hooks install",
    "hooks install": "memrepo hooks install",
    "policy": "memrepo policy\nmemrepo policy --json",
    "policy accept": "memrepo policy accept --why \"constraints are reviewed in the pull request\"",
    "recall": "memrepo recall \"why not restart the service?\" --budget 2000\nmemrepo recall --hook < payload.json",
    "context": "memrepo context --subject project-alpha --budget 4000",
    "flush": "memrepo flush --cycle 12 --session S < answer.md\nmemrepo flush --prompt --lang zh\n"
             "memrepo flush --hook < post-compact-payload.json",
    "prune": "memrepo prune transcript.json > pruned.json\nmemrepo prune - --keep-last-assistants 5 < transcript.json",
    "evidence": "memrepo evidence evidence:3fa9c1d2e4b5",
    "export": "memrepo export --to openclaw ~/openclaw-workspace\nmemrepo export --to jsonl backup.jsonl",
    "mcp": "memrepo --vault ~/agent-memory mcp\nmemrepo mcp --agent executor",
    "daemon": "memrepo daemon status\nmemrepo daemon stop",
    "ui": "memrepo ui\nmemrepo ui --read-only --lang zh --port 8765 --no-open",
    "daemon start": "memrepo daemon start --json",
    "daemon stop": "memrepo daemon stop",
    "daemon status": "memrepo daemon status --json",
    "install": "memrepo install claude-code\nmemrepo --vault ~/agent-memory install claude-code --user",
    "install claude-code": "memrepo install claude-code\nmemrepo --vault ~/agent-memory install claude-code --user --json",
    "uninstall": "memrepo uninstall claude-code",
    "uninstall claude-code": "memrepo uninstall claude-code\nmemrepo uninstall claude-code --user",
}
# Commands without --json, and why (a test requires --json of every other command).
NO_JSON = {"mcp": "a stdio server: it speaks JSON-RPC itself", "ui": "a web server: it serves pages"}


def examples_epilog(path: str) -> str | None:
    text = EXAMPLES.get(path)
    return None if text is None else "Examples:\n\n\b\n" + "\n".join(f"  {line}" for line in text.splitlines())


def strict_options(command) -> None:
    """Give ``command``'s enum and date options their check (a bad value is a usage error, 2)."""
    for param in command.params:
        if param.name in CHECKED_PARAMS:
            param.callback = _chained(param.callback)


def _chained(before):
    def callback(ctx, param, value):
        value = before(ctx, param, value) if before else value
        return commands.checked_option(param.name, value)
    return callback


def _show_version(value: bool) -> None:
    if value:
        from memrepo import __version__
        typer.echo(f"memrepo {__version__}")
        raise typer.Exit(0)


app = typer.Typer(cls=MemrepoGroup, add_completion=True, no_args_is_help=True, rich_markup_mode=None,
                  help="memrepo: git-backed long-term memory for AI agents and the people who supervise them.",
                  epilog=EXIT_CODES_HELP)
proposals_app = typer.Typer(help="List open review proposals, or push one for a pull request.",
                            invoke_without_command=True, rich_markup_mode=None)
hooks_app = typer.Typer(help="Install or run memrepo's git hooks.", rich_markup_mode=None, no_args_is_help=True)
app.add_typer(proposals_app, name="proposals")
app.add_typer(hooks_app, name="hooks")
from memrepo.cli.policy import policy_app  # noqa: E402  (a command group of its own module)

app.add_typer(policy_app, name="policy")
hook_app = typer.Typer(help="Entry points git hooks call (used by the installed shims).", rich_markup_mode=None)
app.add_typer(hook_app, name="hook", hidden=True)
claude.register(app)
app.add_typer(check_app, name="check")

JsonOpt = typer.Option(False, "--json", help="Print JSON instead of text (errors too: {\"error\": ...} on stdout).")


@app.callback()
def _main(vault: Optional[str] = typer.Option(None, "--vault", envvar="MEMREPO_VAULT",
                                              help="Vault to use (default: found from the current directory, as git does)."),
          agent: Optional[str] = typer.Option(None, "--agent", envvar="MEMREPO_AGENT",
                                              help="The agent acting (before or after the command): its private memories, its proposals."),
          as_json: bool = typer.Option(False, "--json", help="JSON output and JSON errors (also accepted after the command)."),
          version: bool = typer.Option(False, "--version", is_eager=True, callback=_show_version,
                                       help="Print memrepo's version and exit.")):
    commands.set_globals(vault, agent, as_json)


_vault, _out, _stdin_text = commands.vault, commands.out, commands.stdin_text


def _run(name: str, params: dict):
    """Run a per-turn command's typer-free body (memrepo/cli/commands.py, which the fast path
    in memrepo/cli/fast.py calls too) with the options typer parsed."""
    try:
        return getattr(commands, name)(**params)
    except commands.BadParameter as e:
        raise typer.BadParameter(str(e)) from None


def _progress(label: str):
    """A progress callback drawing a bar on a terminal (stderr), silent otherwise."""
    if not sys.stderr.isatty():
        return None
    def show(done: int, total: int) -> None:
        width = 30
        filled = int(width * done / max(total, 1))
        sys.stderr.write(f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()
    return show


# ------------------------------------------------------------------ vault

@app.command()
def init(path: Path = typer.Argument(..., help="Directory to create the vault in (new or empty)."),
         ci: Optional[str] = typer.Option(None, "--ci", help="github or gitlab: also commit the forge workflow that runs the recall checks."),
         as_json: bool = JsonOpt):
    """Create a vault: git repository on main, layout, config, .gitignore and hooks."""
    from memrepo import api
    vault = api.init(path, ci=ci)
    _out({"vault": str(vault.root), "commit": vault.head()}, as_json, f"Created vault {vault.root}")


@app.command()
def add(subject: Optional[str] = typer.Option(None, help="Entity the memory is about (default: general)."),
        fact: Optional[str] = typer.Option(None, help="Fact key within the subject: at most one active memory per (subject, fact)."),
        kind: Optional[str] = typer.Option(None, help="event, checkpoint, decision, constraint, policy, permission, preference, state, knowledge, pattern, principle, identity."),
        layer: Optional[str] = typer.Option(None, help="L1 (default) .. L4."),
        summary: Optional[str] = typer.Option(None, help="One line (default: first line of the body)."),
        source: Optional[str] = typer.Option(None, help="user (default), model-inference, tool, import, distill, flush."),
        author: Optional[str] = typer.Option(None, help="Who triggered it (default: $MEMREPO_AUTHOR or git user.name)."),
        tag: List[str] = typer.Option([], "--tag", help="Business tag (repeatable)."),
        link: List[str] = typer.Option([], "--link", help="Related memory id (repeatable)."),
        evidence: List[str] = typer.Option([], "--evidence", help="Pointer: path#L1-L9, memory id, commit, URL (repeatable)."),
        affects: List[str] = typer.Option([], "--affects", help="Behaviour this memory changes (repeatable)."),
        session: Optional[str] = typer.Option(None, help="Agent session id."),
        scope: Optional[str] = typer.Option(None, help="shared (default) or private (the current agent's own: never shared)."),
        weight: Optional[float] = typer.Option(None, help="Base weight 0..1 (protects keystone memories from decay)."),
        confidence: Optional[float] = typer.Option(None, help="Confidence 0..1."),
        expires: Optional[str] = typer.Option(None, help="ISO-8601 date-time after which the memory is cleaned up."),
        memory_id: Optional[str] = typer.Option(None, "--id", help="Id to use (default: generated)."),
        body: Optional[str] = typer.Option(None, help="Markdown body (default: read from stdin when it is not a terminal)."),
        push: bool = typer.Option(False, "--push", help="If this becomes a proposal, push its branch for a pull request."),
        remote: str = typer.Option("origin", help="Remote for --push."),
        files: List[Path] = typer.Option([], "--file", help="A hand-written memory file (front matter + body), or a folder of them (repeatable): each goes through the same checks and risk routing; 'status: pending_review' sends it to review."),
        skip_invalid: bool = typer.Option(False, "--skip-invalid", help="With --file: write the valid files, report the rest."),
        request_id: Optional[str] = typer.Option(None, "--request-id", help="Idempotency key (a job or turn id): run again with the same key, the first write's result is returned and nothing is written twice."),
        call_id: Optional[str] = typer.Option(None, "--call-id", hidden=True, help="Named in the commit (the background server's client finds the write by it)."),
        as_json: bool = JsonOpt):
    """Write one memory. Low risk commits to main; high risk becomes a review proposal.

    With --file, write hand-written memory files instead (the fields come from each file)."""
    if files:
        given = [name for name, value in (("--subject", subject), ("--fact", fact), ("--kind", kind), ("--layer", layer),
                 ("--summary", summary), ("--source", source), ("--tag", tag), ("--link", link), ("--evidence", evidence),
                 ("--affects", affects), ("--session", session), ("--scope", scope), ("--weight", weight),
                 ("--confidence", confidence), ("--expires", expires), ("--id", memory_id), ("--body", body),
                 ("--request-id", request_id))
                 if value not in (None, [])]
        return _add_files(files, given, author=author, skip_invalid=skip_invalid, push=push, remote=remote, as_json=as_json)
    return _run("add", {k: v for k, v in locals().items() if k != "given"})


@app.command()
def show(memory_id: str = typer.Argument(..., metavar="ID"), as_json: bool = JsonOpt):
    """Print one memory (front matter and body) as it is on main."""
    from memrepo.store.vault import render_bytes
    from memrepo.team import scopes
    with _vault() as vault:
        memory = scopes.get(vault, memory_id, agent=state.agent)
    if as_json:
        _out({**dict(memory.meta), "path": memory.path, "body": memory.body}, True)
    else:
        typer.echo(render_bytes(memory).decode("utf-8"), nl=False)


@app.command("list")
def list_(layer: Optional[str] = typer.Option(None, help="L1, L2, L3 or L4."),
          kind: Optional[str] = typer.Option(None, help="A kind of the schema: event, decision, constraint, ..."),
          status: Optional[str] = typer.Option(None, help="active, pending_review, superseded, rejected, archived or rolled_back."),
          subject: Optional[str] = typer.Option(None, help="Only memories about this subject."),
          fact: Optional[str] = typer.Option(None, help="Only memories of this fact key."), as_json: bool = JsonOpt):
    """List memories on main, filtered by layer, kind, status, subject or fact."""
    with _vault() as vault:
        if state.agent:
            from memrepo.team import scopes
            rows = scopes.list_memories(vault, agent=state.agent, layer=layer, kind=kind, status=status,
                                        subject=subject, fact=fact)
        else:
            rows = vault.list(layer=layer, kind=kind, status=status, subject=subject, fact=fact)
    from memrepo.cli.output import table
    text = table(["ID", "LAYER", "KIND", "STATUS", "SUBJECT", "FACT", "SUMMARY"],
                 [[r["id"], r["layer"], r["kind"], r["status"], r["subject"], r["fact"] or "", r["summary"] or ""]
                  for r in rows]) if rows else ""
    if not rows and not as_json and (subject or fact):
        with _vault() as vault:
            what = [f"{name} {value!r}" for name, value in (("subject", subject), ("fact", fact))
                    if value and not vault.list(**{name: value})]
        text = f"no memory has {' or '.join(what)}" if what else text
    _out(rows, as_json, text or "no memories match")


@app.command()
def log(memory_id: str = typer.Argument(..., metavar="ID"), as_json: bool = JsonOpt):
    """The memory's history from git: every commit on main that changed it."""
    with _vault() as vault:
        entries = vault.history(memory_id)
    rows = [{"commit": e.commit, "author": e.author, "date": e.date, "subject": e.subject} for e in entries]
    _out(rows, as_json, "\n".join(f"{r['commit'][:12]} {r['date']} {r['author']}  {r['subject']}" for r in rows))


@app.command()
def validate(paths: List[Path] = typer.Argument(None, help="Files or folders (default: the whole vault)."),
             require_signed: bool = typer.Option(False, "--require-signed", help="Also require a good signature (git's own check) on every commit that made a high-risk memory active or changed the review policy."),
             as_json: bool = JsonOpt):
    """Check memory files and the vault's invariants; exit 1 and list every problem."""
    from memrepo.review import validate as v
    with _vault() as vault:
        report = v.validate_vault(vault, progress=_progress("validate"), require_signed=require_signed) if not paths else None
        problems = report.problems if report else v.validate_paths(vault, paths)
    overrides = report.overrides if report else []
    if as_json:
        _out({"ok": not problems, "problems": [p.as_dict() for p in problems],
              "overrides": [o.as_dict() for o in overrides]}, True)
    else:
        for o in overrides:
            typer.echo(f"note: {o}")
        typer.echo("\n".join(map(str, problems)) if problems else "ok: no problems found",
                   err=bool(problems))
    raise typer.Exit(1 if problems else 0)


@app.command("import")
def import_(file: Optional[Path] = typer.Argument(None, help="JSONL: one object per line, front-matter fields plus 'body' "
                                                            "(with --from: the workspace, project folder or file)."),
            skip_invalid: bool = typer.Option(False, "--skip-invalid", help="Import the valid lines, report the rest."),
            propose: bool = typer.Option(False, "--propose", help="Send the whole import to review as one proposal."),
            author: Optional[str] = typer.Option(None, help="Who runs the import (default: git user.name)."),
            from_: Optional[str] = typer.Option(None, "--from", help="openclaw: FILE is an OpenClaw workspace (MEMORY.md, USER.md, memory/); "
                                                "claude-code: a project's CLAUDE.md files and auto memory (default: this folder); "
                                                "mcp-memory: the MCP memory server's memory.jsonl."),
            no_index: bool = typer.Option(False, "--no-index", help="Only commit: leave the search index and the vectors to the next search."),
            as_json: bool = JsonOpt):
    """Bulk-import memories as a single commit (or one proposal), then bring the search index
    and the semantic vectors up to date (progress bars on a terminal)."""
    from memrepo.errors import UsageError
    from memrepo.review import writes as memories
    if from_ in ("claude-code", "mcp-memory"):
        return claude.import_from(from_, file, author=author, skip_invalid=skip_invalid, no_index=no_index,
                                  as_json=as_json, catch_up=_catch_up)
    if file is None:
        raise UsageError("give the FILE to import (JSONL, a folder of notes, or with --from the source)")
    if from_ is not None:
        from memrepo.agents import openclaw
        if from_ != "openclaw":
            raise UsageError(f"--from {from_} is not one of openclaw, claude-code, mcp-memory")
        with _vault() as vault:
            found = openclaw.import_openclaw(vault, file, author=author)
            ready = _catch_up(vault) if found.commit and not no_index else {}
        _out({**found.as_dict(), **ready}, as_json, f"imported {len(found.imported)} memories from {file} ("
             f"{len(found.superseded)} superseding an edited entry, {found.unchanged} already imported)"
             + (f" -> commit {found.commit[:12]}" if found.commit else ""))
        raise typer.Exit(130 if ready.get("interrupted") else 0)
    with _vault() as vault:
        result = memories.import_jsonl(vault, file, skip_invalid=skip_invalid, propose=propose, author=author,
                                       progress=_progress("import"))
        for p in result.skipped:
            typer.echo(f"skipped {p}", err=True)
        ready = _catch_up(vault) if result.commit and not no_index else {}
    where = f"commit {result.commit[:12]}" if result.commit else (f"proposal {result.proposal}" if result.proposal else "nothing committed")
    _out({**result.as_dict(), **ready}, as_json, f"imported {result.count} memories -> {where}")
    raise typer.Exit(130 if ready.get("interrupted") else 0)


def _catch_up(vault) -> dict:
    """After an import's commit: the search index and the vectors brought to it (notices on
    stderr); the ``semantic`` state for ``--json`` (and ``interrupted`` after Ctrl-C). The
    commit stands whatever happens here: a failure or Ctrl-C is a notice, the rest is left
    to the next search."""
    from memrepo.errors import MemrepoError
    from memrepo.retrieval import search as svc
    later = "the import is committed; the next search brings the search index and the vectors up to date"
    interrupted = False
    try:
        state, notice = svc.catch_up(vault, progress=_progress("index"), vector_progress=_progress("vectors"))
    except (MemrepoError, OSError) as e:   # (a lock held elsewhere, a disk that is full, ...)
        state, notice = svc.vector_state(vault), f"{e}: {later}"
    except KeyboardInterrupt:
        sys.stderr.write("\n")
        state, notice, interrupted = svc.vector_state(vault), f"interrupted: {later} (from the vectors encoded so far)", True
    if state == "hybrid" and (interrupted or notice and later in notice):
        state = "building"
    if notice:
        typer.echo(f"notice: {notice}", err=True)
    return {"semantic": state, **({"interrupted": True} if interrupted else {})}


# ------------------------------------------------------------------ review

@proposals_app.callback()
def proposals_list(ctx: typer.Context,
                   include_all: bool = typer.Option(False, "--all", help="Include applied and rejected proposals."),
                   as_json: bool = JsonOpt):
    """List open proposals (with --all: applied and rejected too, with outcome and reason)."""
    if ctx.invoked_subcommand is not None:
        return
    from memrepo.review import proposals
    with _vault() as vault:
        found = proposals.list_proposals(vault, include_closed=include_all)
    from memrepo.cli.output import table
    rows = []
    for p in found:
        outcome = f" ({p.outcome.get('by')}: {p.outcome.get('reason', p.outcome.get('mode', ''))})" if p.outcome else ""
        if p.outcome.get("declined"):
            outcome += f"; declined: {p.outcome['declined']}"
        undone = p.outcome.get("reverted")
        status = f"{p.status}, {'rolled back' if undone['action'] == 'rollback' else 'reverted'} in {undone['commit'][:12]}" \
            if undone else p.status
        rows.append([p.id, status, ", ".join(p.ids), f"{p.reason}{outcome}"])
    text = table(["PROPOSAL", "STATUS", "MEMORIES", "REASON"], rows) if rows else ""
    _out([p.as_dict() for p in found], as_json, text or ("no proposals" if include_all else "no open proposals"))


@proposals_app.command("push")
def proposals_push(proposal_id: str = typer.Argument(..., metavar="ID"),
                   remote: str = typer.Option("origin", help="Git remote to push to."), as_json: bool = JsonOpt):
    """Push a proposal branch so the team can open a pull request (never forced)."""
    from memrepo import api
    with _vault() as vault:
        branch = api.push_proposal(vault, proposal_id, remote=remote)
        url = api.compare_url(vault, proposal_id, remote=remote)
    _out({"proposal": proposal_id, "branch": branch, "remote": remote, "compare_url": url}, as_json,
         f"pushed {branch} to {remote}: open a pull request from it; merging it applies the proposal"
         + (f"\n  pull request: {url}" if url else ""))


@app.command()
def review(proposal_id: str = typer.Argument(..., metavar="ID", help="Proposal id (or the id of a memory it carries)."),
           markdown: bool = typer.Option(False, "--markdown", help="Print the card and the field-aware diff as markdown (a pull request description)."),
           as_json: bool = JsonOpt):
    """Show a proposal's review card: who, what it supersedes, evidence, effects, rollback point."""
    from memrepo.review import proposals
    if markdown:
        from memrepo import api
        with _vault() as vault:
            text = api.review_markdown(vault, proposal_id)
        _out({"proposal": proposal_id, "markdown": text}, as_json, text.rstrip("\n"))
        return
    with _vault() as vault:
        p = proposals.get(vault, proposal_id)
        text = proposals.card(vault, proposal_id)
        data = {**p.as_dict(), "card": text, "memories_detail": [
            {**dict(m.meta), "path": m.path, "body": m.body} for m in proposals.memories_of(vault, p)]}
        if p.status == "open":  # what applying it does to recall: the check delta
            from memrepo import api
            checks = api.proposal_checks(vault, p.id)
            text, data["checks"] = text.rstrip("\n") + "\n" + "\n".join(checks.card_lines()) + "\n", checks.as_dict()
    _out(data, as_json, text)


@app.command()
def apply(proposal_id: str = typer.Argument(..., metavar="ID"),
          mode: str = typer.Option("overwrite", help="overwrite: supersede the old version; append: keep both when they do not conflict."),
          only: List[str] = typer.Option([], "--only", help="Apply just this memory of a multi-memory proposal (repeatable); the rest are declined."),
          accept_regression: Optional[str] = typer.Option(None, "--accept-regression", metavar="REASON", help="Apply although recall checks regress; the reason is recorded in the apply commit."),
          as_json: bool = JsonOpt):
    """Apply a proposal: the recall checks first (a regression refuses, exit 4), then one merge commit on main."""
    from memrepo import api
    from memrepo.review import proposals
    with _vault() as vault:
        commit = api.apply(vault, proposal_id, mode=mode, only=only or None, accept_regression=accept_regression)
        remote = proposals.delete_pushed_branches(vault, ids=[proposals.get(vault, proposal_id).id])
    _out({"proposal": proposal_id, "commit": commit, "mode": mode, "remote_branches": remote}, as_json,
         f"applied {proposal_id} ({mode}) in {commit[:12]}; undo with 'git revert -m 1 {commit[:12]}'"
         + _remote_lines(remote))


def _remote_lines(remote: dict[str, str]) -> str:
    """What happened to a closed proposal's branch on the remotes it was pushed to."""
    return "".join(f"\n  deleted branch {b}" if outcome == "ok" else f"\n  kept branch {b}: {outcome}"
                   for b, outcome in remote.items())


@app.command()
def reject(proposal_id: str = typer.Argument(..., metavar="ID"),
           why: str = typer.Option(..., "--why", help="Why it is rejected (recorded)."),
           as_json: bool = JsonOpt):
    """Reject a proposal: it leaves the queue; its history stays under refs/memrepo/rejected/."""
    from memrepo.review import proposals
    with _vault() as vault:
        commit = proposals.reject(vault, proposal_id, why=why)
        remote = proposals.delete_pushed_branches(vault, ids=[proposals.get(vault, proposal_id).id])
    _out({"proposal": proposal_id, "commit": commit, "remote_branches": remote}, as_json,
         f"rejected {proposal_id} (recorded in {commit[:12]})" + _remote_lines(remote))


@app.command()
def rollback(memory_id: str = typer.Argument(..., metavar="ID"),
             why: str = typer.Option("", "--why", help="Reason, recorded in the commit."),
             as_json: bool = JsonOpt):
    """Undo the commit that made a memory active (a revert; history is never rewritten)."""
    from memrepo.review import provenance
    with _vault() as vault:
        commit = provenance.rollback(vault, memory_id, reason=why)
    _out({"id": memory_id, "commit": commit}, as_json, f"rolled back {memory_id} in {commit[:12]}")


@app.command()
def why(memory_id: str = typer.Argument(..., metavar="ID"), as_json: bool = JsonOpt):
    """Why is this memory active? Who wrote it, which proposal, who applied it, what it superseded."""
    from memrepo.review import provenance
    with _vault() as vault:
        data = provenance.why(vault, memory_id).as_dict()
    text = "\n".join(f"{k}: {json.dumps(v, ensure_ascii=False) if isinstance(v, dict | list) else v}"
                     for k, v in data.items())
    _out(data, as_json, text)


@app.command()
def history(subject: str = typer.Argument(...), fact: str = typer.Argument(...), as_json: bool = JsonOpt):
    """Every version of a fact that ever existed on main, oldest first, with its status."""
    from memrepo.review import provenance
    with _vault() as vault:
        versions = provenance.fact_history(vault, subject, fact)
    rows = [v.as_dict() for v in versions]
    from memrepo.cli.output import table
    text = table(["DATE", "COMMIT", "ID", "STATUS", "SUMMARY"],
                 [[v.date, v.commit[:12], v.id, v.status or "deleted", f"{v.summary or ''}  ({v.message})"]
                  for v in versions]) if versions else ""
    _out(rows, as_json, text or f"no versions of ({subject}, {fact})")


# ------------------------------------------------------------------ search

@app.command()
def search(query: Optional[str] = typer.Argument(None, help="Free text; ? : * quotes and parentheses are plain text."),
           limit: int = typer.Option(10, "--limit", "-k", min=1, help="Most hits to return."),
           subject: Optional[str] = typer.Option(None, help="Only memories about this subject."),
           layer: Optional[str] = typer.Option(None, help="Only this layer: L1, L2, L3 or L4."),
           kind: Optional[str] = typer.Option(None, help="Only this kind (event, decision, constraint, ...)."),
           tag: Optional[str] = typer.Option(None, help="Only memories with this business tag."),
           since: Optional[str] = typer.Option(None, help="Only memories created on/after this ISO date."),
           deep: bool = typer.Option(False, "--deep", help="Include archived memories."),
           include_history: bool = typer.Option(False, "--history", help="Include superseded and rolled-back versions."),
           advanced: bool = typer.Option(False, "--advanced", help="Treat QUERY as Whoosh query syntax."),
           intent: Optional[str] = typer.Option(None, "--intent", help="Retrieval route instead of the guess from the query: "
                                                "fact (exact keys lead), general, howto (broader text) or history (versions over time)."),
           queries: Optional[Path] = typer.Option(None, "--queries", help="JSONL batch: one {query, qid?, filters...} per line."),
           session: Optional[str] = typer.Option(None, help="Agent session: with --log, results are recorded as recalls."),
           log_recalls: bool = typer.Option(False, "--log", help="Record the hits as recalls of --session (heat, stopwords)."),
           as_json: bool = JsonOpt):
    """Search active memories (best first); says so honestly when nothing is relevant.

    SCORE (0-1) says how well a hit matches, comparably across queries: the best hit scores its
    own match, the idf-weighted share of the query's words it contains (words no memory has
    do not count; with --json: keyword_score), mixed with the cosine of meaning (semantic_score) when the semantic index is
    on; each other hit scores that times its ranking value (BM25F, meaning, same-session
    support, heat from recalls and 'useful' marks) relative to the best, so scores follow the
    order. About 0.8-1: every query word found; about 0.3: a few words or only the meaning.
    It is not a probability."""
    return _run("search", locals())


@app.command()
def reindex(as_json: bool = JsonOpt):
    """Rebuild the search index (and the semantic vectors) from the memory files."""
    from memrepo.retrieval import search as svc
    with _vault() as vault:
        count, state, vectors = svc.reindex(vault, progress=_progress("reindex"), vector_progress=_progress("vectors"))
    if state == "unavailable":
        typer.echo(f"notice: {svc.unavailable_notice()}", err=True)
    _out({"indexed": count, "vectors": vectors, "semantic": state}, as_json,
         f"indexed {count} memories" + (f", {vectors} vectors" if state == "hybrid" else ""))


@app.command()
def useful(memory_id: str = typer.Argument(..., metavar="ID"),
           session: Optional[str] = typer.Option(None, help="Session that found it useful."),
           as_json: bool = JsonOpt):
    """Mark a recalled memory as useful: it ranks higher next time (heat)."""
    from memrepo.retrieval import search as svc
    with _vault() as vault:
        notice = svc.mark_useful(vault, memory_id, session=session)
    if notice:
        typer.echo(f"notice: {notice}", err=True)
    _out({"id": memory_id, "useful": True}, as_json, f"marked {memory_id} useful")


# ------------------------------------------------------------------ lifecycle

NowOpt = typer.Option(None, "--now", help="Pretend today is YYYY-MM-DD (reproducible runs).")


@app.command()
def distill(now: Optional[str] = NowOpt,
            promote: bool = typer.Option(False, "--promote", help="Promote recurring L2 patterns to L3 candidates instead."),
            dry_run: bool = typer.Option(False, "--dry-run", help="Show the candidates; create no proposal."),
            explain: bool = typer.Option(False, "--explain", help="Also say why near-miss groups were dropped."),
            as_json: bool = JsonOpt):
    """Nightly distill: one speaker's L1 entries recurring on 3+ days (small talk left out) become L2 candidates."""
    from memrepo.lifecycle import distill_run
    with _vault() as vault:
        report = distill_run.distill(vault, now=now, promote=promote, dry_run=dry_run, explain=explain,
                                     progress=_progress("distill"))
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
    _out(report.as_dict(), as_json, "\n".join(lines) or f"no new patterns among {report.considered} entries")


@app.command()
def decay(now: Optional[str] = NowOpt,
          dry_run: bool = typer.Option(False, "--dry-run", help="Show who would be archived and why; change nothing."),
          as_json: bool = JsonOpt):
    """Influence decay: archive cold memories (keystones protected); propose deleting dead ones."""
    from memrepo.lifecycle import decay_run
    with _vault() as vault:
        report = decay_run.decay(vault, now=now, dry_run=dry_run, progress=_progress("decay"))
    lines = [f"{d['id']}: {d['action']}{' + delete candidate' if d['delete_candidate'] else ''} "
             f"({d['reason']})" for d in report.decisions if d["action"] != "keep"]
    if report.commit:
        lines.append(f"archived {len(report.archived)} in {report.commit[:12]} (git revert it to undo)")
    if report.proposal:
        lines.append(f"deletion candidates on proposal {report.proposal}")
    _out(report.as_dict(), as_json, "\n".join(lines) or "nothing to archive")


@app.command()
def cleanup(now: Optional[str] = NowOpt,
            dry_run: bool = typer.Option(False, "--dry-run", help="Say what would be archived or demoted; change nothing."),
            as_json: bool = JsonOpt):
    """Monthly clean-up: expired memories are demoted to L1 or archived."""
    from memrepo.lifecycle import decay_run
    with _vault() as vault:
        report = decay_run.cleanup(vault, now=now, dry_run=dry_run)
    would = {"archive": "would archive", "demote": "would demote to L1", "delete": "would delete"}
    _out(report.as_dict(), as_json, "\n".join(f"{a['id']}: {would.get(a['action'], 'would ' + a['action']) if dry_run else a['action']}"
                                              f" ({a['reason']})" for a in report.actions) or "nothing expired")


@app.command()
def graph(memory_id: Optional[str] = typer.Argument(None, metavar="[ID]", help="Show this memory's neighbours."),
          export: Optional[Path] = typer.Option(None, "--export", help="Write the whole graph to FILE."),
          fmt: Optional[str] = typer.Option(None, "--format", help="graphml or dot (default: from the file name)."),
          as_json: bool = JsonOpt):
    """The memory graph: links, [[wikilinks]], supersedes and co-recall, with strengths."""
    from memrepo.lifecycle import decay_run
    if memory_id is None and export is None:
        raise typer.BadParameter("give an ID or --export FILE")
    with _vault() as vault:
        g, _ = decay_run.build_graph(vault)
        if memory_id is not None:
            vault.get(memory_id)
    if export is not None:
        kind = g.export(export, fmt)
        typer.echo(f"wrote {len(g.nodes)} memories and {len(g.edges)} edges to {export} ({kind})", err=as_json)
    if memory_id is not None:
        rows = [{"id": n.id, "direction": n.direction, "kind": n.kind, "strength": n.strength} for n in g.neighbours(memory_id)]
        _out(rows, as_json, "\n".join(f"{'<-' if r['direction'] == 'in' else '->'} {r['id']} ({r['kind']}, {r['strength']:.2f})"
                                     for r in rows) or f"{memory_id} has no neighbours")


@app.command()
def nightly(now: Optional[str] = NowOpt, quiet: bool = typer.Option(False, "--quiet", help="Print only when something changed."),
            as_json: bool = JsonOpt):
    """The nightly job: distill + promote + decay + clean-up + index maintenance, logged."""
    from memrepo.lifecycle import nightly as lifecycle
    with _vault() as vault:
        result = lifecycle.nightly(vault, now=now)
    if quiet and not result["changed"]:
        return
    _out(result, as_json, _nightly_summary(result))


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


@app.command()
def schedule(install: bool = typer.Option(False, "--install", help="Write it for the current user."),
             timer: str = typer.Option("cron", "--kind", help="cron or systemd (user timer)."),
             at: str = typer.Option("03:17", "--at", help="Time of day, HH:MM."),
             as_json: bool = JsonOpt):
    """Print (or --install) a cron entry or systemd user timer running the nightly job."""
    from memrepo.lifecycle import schedule as lifecycle_schedule
    with _vault() as vault:
        if install:
            for line in lifecycle_schedule.install_schedule(vault, kind=timer, at=at):
                typer.echo(line)
            return
        files = lifecycle_schedule.schedule_text(vault, kind=timer, at=at)
    _out(files, as_json, "\n".join(f"# {name}\n{text}" if timer == "systemd" else text for name, text in files.items()))


# ---- trust: hand-written memory files (add --file)

def _add_files(files: List[Path], given: List[str], *, author: Optional[str], skip_invalid: bool, push: bool,
               remote: str, as_json: bool) -> None:
    from memrepo.errors import UsageError
    from memrepo.review import writes as memories
    if given:
        raise UsageError(f"{', '.join(given)} cannot be combined with --file: the fields come from each file's front matter")
    with _vault() as vault:
        result = memories.add_files(vault, files, skip_invalid=skip_invalid, author=author, push=push, remote=remote)
    for p in result.skipped:
        typer.echo(f"skipped {p}", err=True)
    lines = []
    for w in result.written:
        where = f"commit {w.commit[:12]}" if w.commit else f"proposal {w.proposal} (review: memrepo review {w.proposal})"
        lines.append(f"{w.id} {w.status} ({w.risk} risk: {w.risk_reason}) -> {where}")
    lines += [f"took over {path} (its memory is now written by memrepo)" for path in result.taken]
    _out(result.as_dict(), as_json, "\n".join(lines) or "nothing written")


# ---- recovery (a write killed half-way)

@app.command()
def recover(as_json: bool = JsonOpt):
    """Finish a memrepo write that was killed half-way (any memrepo command also does this first)."""
    from memrepo import api
    from memrepo.store.vault import Vault, find_root
    with Vault(find_root(explicit=state.vault_path)) as vault:
        done = api.recover(vault)
    _out({"recovered": done}, as_json,
         "Finished an interrupted write; the checkout matches main." if done else "Nothing to recover.")


# ---- agents: recall, context, flush, prune, evidence, mcp, export

BudgetOpt = typer.Option(4000, "--budget", min=1, help="Most characters to print (never exceeded).")
HookOpt = typer.Option(False, "--hook", help="Read an agent hook's JSON payload on stdin ({prompt, session_id, ...}).")


@app.command()
def recall(text: Optional[str] = typer.Argument(None, help="The latest user message or a transcript (default: stdin)."),
           budget: int = BudgetOpt,
           session: Optional[str] = typer.Option(None, help="Agent session: the recall is logged (heat, co-recall)."),
           subject: Optional[str] = typer.Option(None, help="Only memories about this subject."),
           intent: Optional[str] = typer.Option(None, "--intent", help="Retrieval route instead of the guess: fact, general, howto or history."),
           hook: bool = HookOpt, as_json: bool = JsonOpt):
    """Print the memories relevant to this turn as one block to inject (nothing when nothing is relevant)."""
    return _run("recall", locals())


@app.command()
def context(budget: int = BudgetOpt, subject: Optional[str] = typer.Option(None, help="Constraints and preferences of this subject only."),
            hook: bool = HookOpt, as_json: bool = JsonOpt):
    """Print the session-start block: identity, principles, constraints and preferences, most important first."""
    return _run("context", locals())


@app.command()
def flush(cycle: Optional[str] = typer.Option(None, "--cycle", help="Compaction cycle id: a cycle is flushed at most once (per session)."),
          session: Optional[str] = typer.Option(None, help="Agent session the entries come from."),
          skip_invalid: bool = typer.Option(False, "--skip-invalid", help="Write the valid entries, report the refused ones."),
          show_prompt: bool = typer.Option(False, "--prompt", help="Print the flush prompt a runtime injects, and exit."),
          lang: str = typer.Option("en", "--lang", help="Language of --prompt: en or zh."),
          hook: bool = typer.Option(False, "--hook", help="Read a Claude Code hook's payload on stdin: file the compaction "
                                                       "summary (PostCompact), or with --prompt print the compaction instructions (SessionStart)."),
          as_json: bool = JsonOpt):
    """File the model's pre-compaction flush (JSON or the What/Decision/Why/Evidence/Next template, on stdin)."""
    from memrepo.agents import flush as svc
    from memrepo.errors import UsageError
    if hook:
        return claude.flush_hook(show_prompt, lang, as_json)
    if show_prompt:
        from memrepo.errors import VaultNotFound
        try:
            vault = _vault()
        except VaultNotFound:
            vault = None
        typer.echo(svc.flush_prompt(lang, vault), nl=False)
        return
    if not cycle:
        raise UsageError("--cycle ID is required: the runtime's compaction cycle (a cycle is flushed at most once)")
    text = _stdin_text()
    with _vault() as vault:
        result = svc.flush(vault, text, cycle=cycle, session=session, author=state.agent, skip_invalid=skip_invalid)
    for p in result.skipped:
        typer.echo(f"skipped {p}", err=True)
    if result.notice:
        typer.echo(f"notice: {result.notice}", err=True)
    if result.silent:
        return
    if result.reason == "cycle already flushed":
        _out(result.as_dict(), as_json, f"cycle {cycle} already flushed in {result.commit[:12]}; nothing written")
        return
    lines = [f"flushed {len(result.active)} entr{'y' if len(result.active) == 1 else 'ies'} to the daily log"
             + (f" in {result.commit[:12]}" if result.commit else "")]
    lines += [f"  {i} active" for i in result.active]
    if result.proposal:
        lines.append(f"  {', '.join(result.pending_review)} pending_review -> proposal {result.proposal} "
                     f"(review: memrepo review {result.proposal})")
    _out(result.as_dict(), as_json, "\n".join(lines))


# ---- team: proposals to the shared pool, citations, sync

@app.command()
def propose(subject: Optional[str] = typer.Option(None, help="Entity key, part 1 (e.g. user); required for shared facts."),
            fact: Optional[str] = typer.Option(None, help="Entity key, part 2 (e.g. ui.theme); required for shared facts."),
            summary: Optional[str] = typer.Option(None, help="The value (for knowledge: the context summary)."),
            body: Optional[str] = typer.Option(None, help="Markdown body (default: stdin when it is not a terminal)."),
            kind: Optional[str] = typer.Option(None, help="Kind; knowledge, pattern and principle are shared knowledge (need --confidence)."),
            layer: Optional[str] = typer.Option(None, help="L1 .. L4 (default L2 for the shared pool)."),
            source: Optional[str] = typer.Option(None, help="user (default), model-inference, tool, import, distill, flush."),
            confidence: Optional[float] = typer.Option(None, help="How sure the proposer is, 0..1."),
            weight: Optional[float] = typer.Option(None, help="Base weight 0..1."),
            tag: List[str] = typer.Option([], "--tag", help="Business tag (repeatable)."),
            link: List[str] = typer.Option([], "--link", help="Related memory id (repeatable)."),
            cite: List[str] = typer.Option([], "--cite", help="Memory id this one was derived from (repeatable)."),
            evidence: List[str] = typer.Option([], "--evidence", help="Pointer: path#L1-L9, memory id, commit, URL (repeatable)."),
            affects: List[str] = typer.Option([], "--affects", help="Behaviour this memory changes (repeatable)."),
            session: Optional[str] = typer.Option(None, help="Agent session id."),
            memory_id: Optional[str] = typer.Option(None, "--id", help="Id to use (default: generated)."),
            request_id: Optional[str] = typer.Option(None, "--request-id", help="Idempotency key: run again with the same key, the first write's result is returned and nothing is written twice."),
            as_json: bool = JsonOpt):
    """Propose a memory to the shared pool: duplicates reinforce, conflicts go to arbitration."""
    from memrepo.team import propose as team
    if body is None:
        body = "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()
    fields = {"id": memory_id, "subject": subject, "fact": fact, "kind": kind, "layer": layer, "summary": summary,
              "source": source, "tags": tag, "links": link, "cites": cite, "evidence": evidence, "affects": affects,
              "session": session, "weight": weight, "confidence": confidence}
    with _vault() as vault:
        result = team.propose(vault, fields, body, agent=state.agent, request_id=request_id)
    where = {"reinforced": f"reinforced {result.reinforced}", "written": f"wrote {result.id}",
             "superseded": f"wrote {result.id}, superseding {result.superseded} (policy {result.policy})",
             "proposed": f"{result.id} -> proposal {result.proposal} (review: memrepo review {result.proposal})"}[result.outcome]
    url = None
    if result.proposal:
        from memrepo import api
        with _vault() as vault:
            url = api.compare_url(vault, result.proposal)
    _out({**result.as_dict(), **({"compare_url": url} if result.proposal else {})}, as_json, f"{result.outcome}: {where}" + (f"\n  {result.reason}" if result.reason else "")
         + (f"\n  pull request, once pushed ('memrepo proposals push {result.proposal}'): {url}" if url else ""))


@app.command("cite")
def cite_(ids: List[str] = typer.Argument(..., metavar="ID...", help="Memory ids the output used."),
          by: str = typer.Option(..., "--by", help="The agent whose output cites them."),
          ref: str = typer.Option(..., "--ref", help="The output: a file, URL, message or run id."),
          as_json: bool = JsonOpt):
    """Record that an agent output cites memories (committed under citations/, travels with sync)."""
    from memrepo.team import citations
    with _vault() as vault:
        commit = citations.cite(vault, ids, by=by, ref=ref)
    _out({"by": by, "ref": ref, "ids": ids, "commit": commit}, as_json, f"recorded: {ref} by {by} cites {', '.join(ids)} ({commit[:12]})")


@app.command("cited-by")
def cited_by(memory_id: str = typer.Argument(..., metavar="ID"), as_json: bool = JsonOpt):
    """The memories and recorded outputs that cite ID."""
    from memrepo.team import citations
    with _vault() as vault:
        found = citations.cited_by(vault, memory_id)
    _out([c.as_dict() for c in found], as_json, "\n".join(c.label() for c in found) or f"nothing cites {memory_id}")


@app.command()
def notices(ack: List[int] = typer.Option([], "--ack", help="Acknowledge notice N (repeatable): it is no longer listed."),
            as_json: bool = JsonOpt):
    """Citing memories and outputs to re-evaluate because what they cite changed (with --agent: yours)."""
    from memrepo.team import citations
    with _vault() as vault:
        if ack:
            commit = citations.ack(vault, ack, agent=state.agent)
            _out({"acknowledged": ack, "commit": commit}, as_json, f"acknowledged {', '.join(map(str, ack))} ({commit[:12]})")
            return
        found = citations.notices(vault, agent=state.agent)
    _out([n.as_dict() for n in found], as_json, "\n".join(n.text() for n in found) or "no notices")



@app.command()
def sync(remote: str = typer.Option("origin", "--remote", help="Git remote the team shares the vault through."),
         as_json: bool = JsonOpt):
    """Share the vault through a git remote: fetch, merge by meaning, re-check, push (never forced)."""
    from memrepo.team import sync as team
    with _vault() as vault:
        team.install_driver(vault)
        result = team.sync(vault, remote=remote)
    lines = [f"{remote}: integrated {result.integrated}; "
             + (f"pushed {(result.after or '')[:12]}" if result.pushed else "NOT pushed")
             + (f" after {result.attempts} attempts" if result.attempts > 1 else "")]
    lines += [f"  conflict proposal {p} (review: memrepo review {p})" for p in result.proposals]
    lines += [f"  proposal {p} was closed on another clone" for p in result.adopted]
    lines += [f"  deleted {b} on {remote}: the proposal is closed" for b in result.deleted]
    lines += [f"  not pushed {ref}: {why}" for ref, why in result.not_pushed.items()]
    lines += [f"  {n}" for n in result.notes]
    _out(result.as_dict(), as_json, "\n".join(lines))
    if result.unreviewed and not as_json:
        typer.echo(f"warning: {remote}'s commits brought {len(result.unreviewed)} change(s) past review "
                   "(memrepo keeps the reviewed policy; 'memrepo validate' lists them):", err=True)
        for problem in result.unreviewed:
            typer.echo(f"  {problem}", err=True)
    if not result.pushed:
        raise typer.Exit(1)


@app.command()
def prune(transcript: Path = typer.Argument(..., metavar="TRANSCRIPT.json", help="OpenAI or Anthropic message JSON, or Claude Code's transcript .jsonl ('-' for stdin)."),
          keep_last_assistants: int = typer.Option(3, "--keep-last-assistants", help="Never touch the last N assistant turns and their tool results."),
          soft_chars: int = typer.Option(4000, "--soft-chars", help="Tool results longer than this are trimmed to head + tail."),
          head: int = typer.Option(1500, "--head", help="Characters kept from the start of a trimmed result."),
          tail: int = typer.Option(1500, "--tail", help="Characters kept from the end of a trimmed result."),
          hard_ratio: float = typer.Option(0.5, "--hard-ratio", help="Still above this share of the original size: clear the oldest results."),
          as_json: bool = JsonOpt):
    """Prune old tool results (soft trim, then hard clear); every result removed is kept as evidence first."""
    from memrepo.agents import prune as svc
    text = _stdin_text() if str(transcript) == "-" else transcript.read_bytes()
    options = svc.Options(keep_last_assistants, soft_chars, head, tail, hard_ratio)
    with _vault() as vault:
        result = svc.prune_text(vault, text, options, where=str(transcript))
    if as_json:
        _out({"transcript": result.transcript, **result.report()}, True)
        return
    typer.echo(result.text(), nl=not result.jsonl)
    typer.echo(f"pruned {result.chars_before:,} -> {result.chars_after:,} characters: trimmed {len(result.trimmed)}, "
               f"cleared {len(result.cleared)} tool results"
               + (f"; evidence committed in {result.commit[:12]}" if result.commit else ""), err=True)
    for r in result.trimmed + result.cleared:
        typer.echo(f"  message {r['message']}: {r['chars']:,} characters -> {r['evidence']}", err=True)
    for pointer in result.outside_git:
        typer.echo(f"  {pointer} is over the evidence size cap: kept in .memrepo/evidence/, not in git", err=True)


@app.command()
def evidence(pointer: str = typer.Argument(..., metavar="POINTER", help="evidence:<sha256 prefix> or the bare hex prefix."),
             as_json: bool = JsonOpt):
    """Print the full text a pruned tool result or a memory's evidence pointer names."""
    from memrepo.agents import evidence as svc
    with _vault() as vault:
        found = svc.get_evidence(vault, pointer)
    if as_json:
        _out({"pointer": found.pointer, "sha256": found.sha, "path": found.path, "text": found.text}, True)
    else:
        typer.echo(found.text, nl=not found.text.endswith("\n"))


@app.command()
def mcp(vault: Optional[str] = typer.Option(None, "--vault", help="Vault to serve (default: the global --vault, or found as git does).")):
    """Run the MCP server on stdio (tools: memory_recall, memory_search, memory_get, memory_write, ...).

    --agent NAME (global, before or after the command) is recorded as the author of writes."""
    from memrepo.mcp.server import serve
    serve(vault or state.vault_path, state.agent)


@app.command()
def export(to: str = typer.Option(..., "--to", help="openclaw (a workspace folder) or jsonl (the import format)."),
           target: Optional[Path] = typer.Argument(None, metavar="[TARGET]", help="Workspace folder (openclaw) or FILE (jsonl; default stdout)."),
           as_json: bool = JsonOpt):
    """Export the vault: an OpenClaw workspace from the active memories, or every memory as import JSONL."""
    from memrepo.agents import openclaw_export as openclaw
    from memrepo.errors import UsageError
    from memrepo.model import check_choice
    check_choice("to", to, openclaw.EXPORT_FORMATS)
    if to == "jsonl":
        with _vault() as vault:
            lines = list(openclaw.export_jsonl(vault))
        if target is None:
            for line in lines:
                typer.echo(line)
        else:
            target.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
            _out({"file": str(target), "memories": len(lines)}, as_json, f"wrote {len(lines)} memories to {target}")
        return
    if target is None:
        raise UsageError("give the OpenClaw workspace folder: memrepo export --to openclaw WORKSPACE")
    with _vault() as vault:
        result = openclaw.export_openclaw(vault, target)
    _out(result.as_dict(), as_json, f"wrote {', '.join(result.files)} in {target}: {result.written} memories"
         + (f" ({result.left_out} over OpenClaw's budgets, named on pointer lines)" if result.left_out else "")
         + (f"; the files it replaced are kept in {result.backup}" if result.backup else ""))


from memrepo.cli import ui as ui_command  # noqa: E402  (memrepo ui, in its own module)

ui_command.register(app)


# ---- daemon: the background server that answers search, recall, context and add warm

daemon_app = typer.Typer(help="The background server that answers search, recall, context and add warm "
                              "(started by those commands; MEMREPO_DAEMON=0 turns it off).",
                         rich_markup_mode=None, no_args_is_help=True)
app.add_typer(daemon_app, name="daemon")


def _daemon_report(found: dict | None, as_json: bool, none: str) -> None:
    if as_json:
        _out({"running": found is not None, **(found or {})}, True)
    elif found is None:
        typer.echo(none)
    else:
        typer.echo(f"running: pid {found['pid']}, {found['requests']} calls answered, idle {found['idle_seconds']:.0f} s "
                   f"(exits after {found['idle_exit']:.0f} s idle), socket {found['socket']}")


@daemon_app.command("start")
def daemon_start(as_json: bool = JsonOpt):
    """Start the server for this installation now (search, recall, context and add also start it)."""
    from memrepo.cli import daemon
    from memrepo.errors import UsageError
    if not daemon.enabled():
        raise UsageError(f"the background server is turned off ({daemon.ENV}=0)")
    path = daemon.start(wait=30.0)
    if path is None:
        raise UsageError("no background server can run here: its runtime folder is not a private folder of this "
                         f"user or its path is too long (set {daemon.RUNTIME_ENV})")
    _daemon_report(daemon.ask("status", path), as_json, "the server did not start; commands run in-process")


@daemon_app.command("stop")
def daemon_stop(as_json: bool = JsonOpt):
    """Stop every background server of this user (the next search starts one again)."""
    from memrepo.cli import daemon
    stopped = daemon.stop()
    _out({"stopped": [s["pid"] for s in stopped]}, as_json,
         f"stopped {len(stopped)} server(s)" + (f": pid {', '.join(str(s['pid']) for s in stopped)}" if stopped else ""))


@daemon_app.command("status")
def daemon_status(as_json: bool = JsonOpt):
    """Whether the server for this installation runs: its pid, calls answered, idle time, socket."""
    from memrepo.cli import daemon
    path = daemon.socket_path()
    found = daemon.ask("status", path) if path else None
    _daemon_report(found, as_json, "not running" + ("" if daemon.enabled() else f" (turned off: {daemon.ENV}=0)"))


# ------------------------------------------------------------------ hooks

@hooks_app.command("install")
def hooks_install(as_json: bool = JsonOpt):
    """Install the pre-commit and pre-merge-commit hooks (an existing hook is kept as .legacy)."""
    from memrepo.review import hooks
    from memrepo.team import sync as team
    with _vault() as vault:
        lines = list(hooks.install(vault.root)) + list(team.install_driver(vault))
        notes = team.fetch_records(vault)  # a fresh clone takes the review records it lacks
    _out({"installed": lines, "notes": notes}, as_json, "\n".join(lines + notes))


@hook_app.command("pre-commit")
def hook_pre_commit():
    """Validate what is staged (run by git)."""
    return _run("hook_pre_commit", locals())


@hook_app.command("pre-merge-commit")
def hook_pre_merge_commit():
    """Validate a merge before git records it (run by git)."""
    return _run("hook_pre_merge_commit", locals())


def _command_name(argv: list[str]) -> str | None:
    """The sub-command named on the command line, if any."""
    rest = hoist_globals(argv, GLOBAL_OPTIONS)[2]
    return rest[0] if rest and not rest[0].startswith("-") else None


def _app_for(argv: list[str]) -> typer.Typer:
    """An app holding only the invoked command: typer would otherwise build every command's
    parameters on each call, and the CLI starts on every agent turn."""
    name = _command_name(argv)
    found = [c for c in app.registered_commands if (c.name or c.callback.__name__.replace("_", "-")) == name]
    if not found:
        return app
    small = typer.Typer(cls=MemrepoGroup, add_completion=False, rich_markup_mode=None, help=app.info.help,
                        epilog=EXIT_CODES_HELP)
    small.registered_callback = app.registered_callback
    small.registered_commands = found
    return small


def main(argv: list[str] | None = None) -> int:
    """Console entry point; :class:`MemrepoGroup` maps every error to its message and exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    return typer.main.get_command(_app_for(argv)).main(args=argv, prog_name="memrepo", standalone_mode=False)


# ---- the fast path's option table (memrepo/cli/fast.py parses these commands without typer)

# Command paths the fast path runs; their bodies live in memrepo/cli/commands.py.
FAST_COMMANDS = ("add", "search", "recall", "context", "hook pre-commit", "hook pre-merge-commit")
SPEC_FILE = Path(__file__).with_name("spec.py")


def fast_spec() -> dict[str, list[dict]]:
    """The global options ("") and the options of each of FAST_COMMANDS, as typer declares them."""
    group = typer.main.get_command(app)
    spec = {"": [_param_spec(p) for p in group.params]}
    for path in FAST_COMMANDS:
        command = group
        for name in path.split():
            command = command.commands[name]
        spec[path] = [_param_spec(p) for p in command.params]
    return spec


def _param_spec(p) -> dict:
    kinds = {"StringParamType": "str", "IntParamType": "int", "IntRange": "int", "FloatParamType": "float",
             "BoolParamType": "bool", "TyperPath": "path"}
    kind = kinds.get(type(p.type).__name__)
    plain_path = {"exists": False, "file_okay": True, "dir_okay": True, "readable": True, "writable": False,
                  "resolve_path": False, "allow_dash": False}
    if kind == "path" and any(getattr(p.type, k) != v for k, v in plain_path.items()):
        kind = None
    if kind is None or getattr(p.type, "max", None) is not None or getattr(p.type, "min_open", False) \
            or getattr(p.type, "clamp", False) or p.nargs != 1 or getattr(p, "count", False) \
            or (p.callback and not getattr(p, "is_flag", False)):
        raise ValueError(f"option {p.name}: the fast path (memrepo/cli/fast.py) does not parse this kind of option")
    flag = bool(getattr(p, "is_flag", False))
    default = p.default
    return {"name": p.name, "kind": p.param_type_name, "opts": list(p.opts),
            "secondary": list(getattr(p, "secondary_opts", [])), "type": kind, "flag": flag,
            "multiple": bool(p.multiple), "default": list(default or []) if p.multiple else default,
            "required": bool(p.required), "envvar": p.envvar, "min": getattr(p.type, "min", None),
            "acts": p.callback is not None}  # --version, --install-completion: typer acts on them


def spec_text() -> str:
    """memrepo/cli/spec.py as ``make cli-spec`` writes it."""
    lines = ['"""The options of the fast path\'s commands, generated from the typer declarations in',
             'memrepo/cli/app.py by ``make cli-spec`` (do not edit; tests/test_cli_fast.py checks it)."""',
             "", "COMMANDS = {"]
    for path, params in fast_spec().items():
        lines += [f"    {path!r}: ["] + [f"        {p!r}," for p in params] + ["    ],"]
    return "\n".join(lines + ["}", ""])


def write_spec() -> None:
    SPEC_FILE.write_text(spec_text(), encoding="utf-8")
