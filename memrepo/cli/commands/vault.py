"""The vault and its memories: init, add, show, list, log, validate, import, recover."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer

from memrepo import api
from memrepo.cli import call, output, params
from memrepo.cli.output import echo, out
from memrepo.errors import MemrepoError, UsageError

app = typer.Typer()


@app.command(epilog=params.examples("memrepo init ~/agent-memory"))
def init(path: Path = typer.Argument(..., help="Directory to create the vault in (new or empty)."),
         ci: Optional[str] = typer.Option(None, "--ci", help="github or gitlab: also commit the forge workflow that runs the recall checks."),
         as_json: bool = params.JSON):
    """Create a vault: git repository on main, layout, config, .gitignore and hooks."""
    vault = api.init(path, ci=ci)
    out({"vault": str(vault.root), "commit": vault.head()}, as_json, f"Created vault {vault.root}")


@app.command(epilog=params.examples(
    "memrepo add --subject project-alpha --kind decision --summary \"Ship 2.3 after the migration\" --body \"...\"",
    "echo \"body\" | memrepo add --subject user --kind preference --summary \"Short answers\" --json"))
@params.takes_fields("add")
def add(fields: dict, given: List[str],
        body: Optional[str] = typer.Option(None, help="Markdown body (default: read from stdin when it is not a terminal)."),
        push: bool = typer.Option(False, "--push", help="If this becomes a proposal, push its branch for a pull request."),
        remote: str = typer.Option("origin", help="Remote for --push."),
        files: List[Path] = typer.Option([], "--file", help="A hand-written memory file (front matter + body), or a folder of them (repeatable): each goes through the same checks and risk routing; 'status: pending_review' sends it to review."),
        skip_invalid: bool = typer.Option(False, "--skip-invalid", help="With --file: write the valid files, report the rest."),
        request_id: Optional[str] = params.REQUEST_ID,
        call_id: Optional[str] = typer.Option(None, "--call-id", hidden=True, help="Named in the commit (the background server's client finds the write by it)."),
        find_call: bool = typer.Option(False, "--find-call", hidden=True, help="Write nothing: report the write --call-id made, if any (the client asks this when the server died during the call)."),
        as_json: bool = params.JSON):
    """Write one memory. Low risk commits to main; high risk becomes a review proposal.

    With --file, write hand-written memory files instead (the fields come from each file)."""
    author = fields.pop("author")
    if files:
        given = given + (["--request-id"] if request_id is not None else [])
        _add_files(files, [g for g in given if g != "--author"] + (["--body"] if body is not None else []), author=author,
                   skip_invalid=skip_invalid, push=push, remote=remote, as_json=as_json)
        return
    if find_call and call_id:
        _report_call(call_id, push=push, remote=remote, as_json=as_json)
        return
    if body is None:
        body = call.stdin_text()
    with call.vault() as vault:
        result = api.add(vault, fields, body, agent=call.state.agent, author=author, push=push, remote=remote,
                         request_id=request_id, call_id=call_id)
    _report_add(result, push=push, remote=remote, as_json=as_json)


STOPPED_UNWRITTEN = ("memrepo: the background server stopped during the call before anything was written "
                     "(nothing was written); run the command again")


def _report_call(call_id: str, *, push: bool, remote: str, as_json: bool) -> None:
    """The answer to an ``add`` the background server was killed during: the write it made
    (found by its call id once a killed write is finished), or that nothing was written (75)."""
    with call.vault() as vault:
        commit = api.find_call(vault, call_id)
        if commit is None:
            echo(STOPPED_UNWRITTEN, err=True)
            raise typer.Exit(75)
        result = api.result_of(vault, commit)
    _report_add(result, push=push, remote=remote, as_json=as_json)


def _report_add(result, *, push: bool, remote: str, as_json: bool) -> None:
    where = f"commit {result.commit[:12]}" if result.commit else f"proposal {result.proposal} (review: memrepo review {result.proposal})"
    if push and result.proposal:
        where += f"; pushed branch proposal/{result.proposal} to {remote}: open a pull request from it"
    out(result.as_dict(), as_json, f"{result.id} {result.status} ({result.risk} risk: {result.risk_reason}) -> {where}")


def _add_files(files: List[Path], given: List[str], *, author: Optional[str], skip_invalid: bool, push: bool,
               remote: str, as_json: bool) -> None:
    if given:
        raise UsageError(f"{', '.join(given)} cannot be combined with --file: the fields come from each file's front matter")
    with call.vault() as vault:
        result = api.add_files(vault, files, skip_invalid=skip_invalid, author=author, agent=call.state.agent,
                               push=push, remote=remote)
    for p in result.skipped:
        echo(f"skipped {p}", err=True)
    lines = []
    for w in result.written:
        where = f"commit {w.commit[:12]}" if w.commit else f"proposal {w.proposal} (review: memrepo review {w.proposal})"
        lines.append(f"{w.id} {w.status} ({w.risk} risk: {w.risk_reason}) -> {where}")
    lines += [f"took over {path} (its memory is now written by memrepo)" for path in result.taken]
    out(result.as_dict(), as_json, "\n".join(lines) or "nothing written")


@app.command(epilog=params.examples("memrepo show mem_20261201_7k3p9x", "memrepo show mem_20261201_7k3p9x --json"))
def show(memory_id: str = typer.Argument(..., metavar="ID"), as_json: bool = params.JSON):
    """Print one memory (front matter and body) as it is on main."""
    with call.vault() as vault:
        memory = api.get(vault, memory_id, agent=call.state.agent)
    if as_json:
        out({**dict(memory.meta), "path": memory.path, "body": memory.body}, True)
    else:
        echo(api.render_bytes(memory).decode("utf-8"), nl=False)


@app.command("list", epilog=params.examples("memrepo list --layer L2 --status active", "memrepo list --subject user --json"))
def list_(layer: Optional[str] = typer.Option(None, help="L1, L2, L3 or L4."),
          kind: Optional[str] = typer.Option(None, help="A kind of the schema: event, decision, constraint, ..."),
          status: Optional[str] = typer.Option(None, help="active, pending_review, superseded, rejected, archived or rolled_back."),
          subject: Optional[str] = typer.Option(None, help="Only memories about this subject."),
          fact: Optional[str] = typer.Option(None, help="Only memories of this fact key."), as_json: bool = params.JSON):
    """List memories on main, filtered by layer, kind, status, subject or fact."""
    filters = {"layer": layer, "kind": kind, "status": status, "subject": subject, "fact": fact}
    with call.vault() as vault:
        if call.state.agent:
            rows = api.list_memories(vault, agent=call.state.agent, **filters)
        else:
            rows = vault.list(**filters)
        missing = [f"{name} {value!r}" for name, value in (("subject", subject), ("fact", fact))
                   if value and not rows and not as_json and not vault.list(**{name: value})]
    text = output.table(["ID", "LAYER", "KIND", "STATUS", "SUBJECT", "FACT", "SUMMARY"],
                        [[r["id"], r["layer"], r["kind"], r["status"], r["subject"], r["fact"] or "", r["summary"] or ""]
                         for r in rows]) if rows else ""
    if missing:
        text = f"no memory has {' or '.join(missing)}"
    out(rows, as_json, text or "no memories match")


@app.command(epilog=params.examples("memrepo log mem_20261201_7k3p9x"))
def log(memory_id: str = typer.Argument(..., metavar="ID"), as_json: bool = params.JSON):
    """The memory's history from git: every commit on main that changed it."""
    with call.vault() as vault:
        entries = vault.history(memory_id)
    rows = [{"commit": e.commit, "author": e.author, "date": e.date, "subject": e.subject} for e in entries]
    out(rows, as_json, "\n".join(f"{r['commit'][:12]} {r['date']} {r['author']}  {r['subject']}" for r in rows))


@app.command(epilog=params.examples("memrepo validate", "memrepo validate memories/L2 --json"))
def validate(paths: List[Path] = typer.Argument(None, help="Files or folders (default: the whole vault)."),
             require_signed: bool = typer.Option(False, "--require-signed", help="Also require a good signature (git's own check) on every commit that made a high-risk memory active or changed the review policy."),
             as_json: bool = params.JSON):
    """Check memory files and the vault's invariants; exit 1 and list every problem."""
    with call.vault() as vault:
        report = api.validate_vault(vault, progress=output.progress("validate"),
                                    require_signed=require_signed) if not paths else None
        problems = report.problems if report else api.validate_paths(vault, paths)
    overrides = report.overrides if report else []
    if as_json:
        out({"ok": not problems, "problems": [p.as_dict() for p in problems],
             "overrides": [o.as_dict() for o in overrides]}, True)
    else:
        for o in overrides:
            echo(f"note: {o}")
        echo("\n".join(map(str, problems)) if problems else "ok: no problems found", err=bool(problems))
    raise typer.Exit(1 if problems else 0)


@app.command("import", epilog=params.examples(
    "memrepo import memories.jsonl --skip-invalid", "memrepo import ~/notes --propose",
    "memrepo import --from claude-code ~/code/project", "memrepo import --from mcp-memory memory.jsonl",
    "memrepo import memories.jsonl --wait"))
def import_(file: Optional[Path] = typer.Argument(None, help="JSONL: one object per line, front-matter fields plus 'body' "
                                                            "(with --from: the workspace, project folder or file)."),
            skip_invalid: bool = typer.Option(False, "--skip-invalid", help="Import the valid lines, report the rest."),
            propose: bool = typer.Option(False, "--propose", help="Send the whole import to review as one proposal."),
            author: Optional[str] = typer.Option(None, help="Who runs the import (default: git user.name)."),
            from_: Optional[str] = typer.Option(None, "--from", help="openclaw: FILE is an OpenClaw workspace (MEMORY.md, USER.md, memory/); "
                                                "claude-code: a project's CLAUDE.md files and auto memory (default: this folder); "
                                                "mcp-memory: the MCP memory server's memory.jsonl."),
            no_index: bool = typer.Option(False, "--no-index", help="Only commit: leave the search index and the vectors to the next search."),
            wait: bool = typer.Option(False, "--wait", help="Also encode the new memories' vectors before returning (a progress bar) "
                                      "instead of in the background."),
            as_json: bool = params.JSON):
    """Bulk-import memories as a single commit (or one proposal), then bring the search index
    up to date (a progress bar on a terminal): the memories are searchable by keywords when it
    returns, and their semantic vectors are built in the background (memrepo status shows how
    far; --wait builds them here)."""
    if from_ in ("claude-code", "mcp-memory"):
        _import_from(from_, file, author=author, skip_invalid=skip_invalid, no_index=no_index, wait=wait,
                     as_json=as_json)
    if file is None:
        raise UsageError("give the FILE to import (JSONL, a folder of notes, or with --from the source)")
    if from_ is not None:
        if from_ != "openclaw":
            raise UsageError(f"--from {from_} is not one of openclaw, claude-code, mcp-memory")
        with call.vault() as vault:
            found = api.import_openclaw(vault, file, author=author, agent=call.state.agent)
            ready = _catch_up(vault, wait=wait) if found.commit and not no_index else {}
        out({**found.as_dict(), **ready}, as_json, f"imported {len(found.imported)} memories from {file} ("
            f"{len(found.superseded)} superseding an edited entry, {found.unchanged} already imported)"
            + (f" -> commit {found.commit[:12]}" if found.commit else ""))
        raise typer.Exit(130 if ready.get("interrupted") else 0)
    with call.vault() as vault:
        result = api.import_jsonl(vault, file, skip_invalid=skip_invalid, propose=propose, author=author,
                                  agent=call.state.agent, progress=output.progress("import"))
        for p in result.skipped:
            echo(f"skipped {p}", err=True)
        ready = _catch_up(vault, wait=wait) if result.commit and not no_index else {}
    where = f"commit {result.commit[:12]}" if result.commit else (f"proposal {result.proposal}" if result.proposal else "nothing committed")
    out({**result.as_dict(), **ready}, as_json, f"imported {result.count} memories -> {where}")
    raise typer.Exit(130 if ready.get("interrupted") else 0)


def _import_from(source: str, path: Optional[Path], *, author: Optional[str], skip_invalid: bool, no_index: bool,
                 wait: bool, as_json: bool) -> None:
    """``import --from claude-code [DIR]`` and ``import --from mcp-memory FILE``."""
    with call.vault() as vault:
        if source == "claude-code":
            result = api.import_claude_code(vault, path, author=author, skip_invalid=skip_invalid)
        elif path is None:
            raise UsageError("give the knowledge graph file: memrepo import --from mcp-memory memory.jsonl")
        else:
            result = api.import_mcp_memory(vault, path, author=author, skip_invalid=skip_invalid)
        ready = _catch_up(vault, wait=wait) if result.commit and not no_index else {}
    for p in result.skipped:
        echo(f"skipped {p}", err=True)
    out({**result.as_dict(), **ready}, as_json,
        f"imported {len(result.imported)} new and {len(result.updated)} updated memories from {source} "
        f"({result.unchanged} already imported)" + (f" -> commit {result.commit[:12]}" if result.commit else ""))
    raise typer.Exit(130 if ready.get("interrupted") else 0)


def _catch_up(vault: api.Vault, *, wait: bool) -> dict:
    """After an import's commit: the search index brought to it, and the vectors (here with
    ``wait``, else in the background); notices on stderr; the ``semantic`` state for
    ``--json`` (and ``interrupted`` after Ctrl-C). The commit stands whatever happens here:
    a failure or Ctrl-C is a notice, the rest is left to the next search."""
    later = "the import is committed; the next search brings the search index and the vectors up to date"
    interrupted = False
    try:
        state, notice = api.catch_up(vault, wait=wait, progress=output.progress("index"), vector_progress=output.progress("vectors"))
    except (MemrepoError, OSError) as e:   # (a lock held elsewhere, a disk that is full, ...)
        state, notice = api.vector_state(vault), f"{e}: {later}"
    except KeyboardInterrupt:
        sys.stderr.write("\n")
        state, notice, interrupted = api.vector_state(vault), f"interrupted: {later} (from the vectors encoded so far)", True
    if state == "hybrid" and (interrupted or notice and later in notice):
        state = "building"
    if notice:
        echo(f"notice: {notice}", err=True)
    return {"semantic": state, **({"interrupted": True} if interrupted else {})}


@app.command(epilog=params.examples("memrepo recover", "memrepo recover --json"))
def recover(as_json: bool = params.JSON):
    """Finish a memrepo write that was killed half-way (any memrepo command also does this first)."""
    with api.Vault(api.find_root(explicit=call.state.vault_path)) as vault:
        done = api.recover(vault)
    out({"recovered": done}, as_json,
        "Finished an interrupted write; the checkout matches main." if done else "Nothing to recover.")
