"""What agents use: recall, context, flush, prune, evidence, export, mcp."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional

import typer

from memrepo import api
from memrepo.cli import call, params
from memrepo.cli.output import echo, out
from memrepo.errors import UsageError, VaultNotFound
from memrepo.model import check_choice

app = typer.Typer()


@app.command(epilog=params.examples("memrepo recall \"why not restart the service?\" --budget 2000",
                                    "memrepo recall --hook < payload.json"))
def recall(text: Optional[str] = typer.Argument(None, help="The latest user message or a transcript (default: stdin)."),
           budget: int = params.BUDGET,
           session: Optional[str] = typer.Option(None, help="Agent session: the recall is logged (heat, co-recall)."),
           subject: Optional[str] = typer.Option(None, help="Only memories about this subject."),
           intent: Optional[str] = typer.Option(None, "--intent", help="Retrieval route instead of the guess: fact, general, howto or history."),
           hook: bool = params.HOOK, as_json: bool = params.JSON):
    """Print the memories relevant to this turn as one block to inject (nothing when nothing is relevant)."""
    if hook:
        payload = api.hook_payload(call.stdin_text())
        text, session = payload["prompt"], session or payload["session_id"]
    elif text is None:
        text = call.stdin_text()
    with call.vault() as vault:
        result = api.recall(vault, text, agent=call.state.agent, budget=budget, session=session, subject=subject,
                            intent=intent)
    if as_json:
        out(result.as_dict(), True)
    elif result.text:
        echo(result.text)


@app.command(epilog=params.examples("memrepo context --subject project-alpha --budget 4000"))
def context(budget: int = params.BUDGET,
            subject: Optional[str] = typer.Option(None, help="Constraints and preferences of this subject only."),
            hook: bool = params.HOOK, as_json: bool = params.JSON):
    """Print the session-start block: identity, principles, constraints and preferences, most important first."""
    if hook:
        api.hook_payload(call.stdin_text())
    with call.vault() as vault:
        packed = api.context(vault, agent=call.state.agent, budget=budget, subject=subject)
    if as_json:
        out({"memories": list(packed.memories), "chars": packed.chars}, True)
    elif packed.text:
        echo(packed.text)


@app.command(epilog=params.examples("memrepo flush --cycle 12 --session S < answer.md", "memrepo flush --prompt --lang zh",
                                    "memrepo flush --hook < post-compact-payload.json"))
def flush(cycle: Optional[str] = typer.Option(None, "--cycle", help="Compaction cycle id: a cycle is flushed at most once (per session)."),
          session: Optional[str] = typer.Option(None, help="Agent session the entries come from."),
          skip_invalid: bool = typer.Option(False, "--skip-invalid", help="Write the valid entries, report the refused ones."),
          show_prompt: bool = typer.Option(False, "--prompt", help="Print the flush prompt a runtime injects, and exit."),
          lang: str = typer.Option("en", "--lang", help="Language of --prompt: en or zh."),
          hook: bool = typer.Option(False, "--hook", help="Read a Claude Code hook's payload on stdin: file the compaction "
                                                       "summary (PostCompact), or with --prompt print the compaction "
                                                       "instructions (SessionStart); every failure is one line, exit 1."),
          as_json: bool = params.JSON):
    """File the model's pre-compaction flush (JSON or the What/Decision/Why/Evidence/Next template, on stdin)."""
    if hook:
        _flush_hook(show_prompt, lang, as_json)
        return
    if show_prompt:
        echo(_prompt(api.flush_prompt, lang), nl=False)
        return
    if not cycle:
        raise UsageError("--cycle ID is required: the runtime's compaction cycle (a cycle is flushed at most once)")
    text = call.stdin_text()
    with call.vault() as vault:
        result = api.flush(vault, text, cycle=cycle, session=session, author=call.state.agent, skip_invalid=skip_invalid)
    for p in result.skipped:
        echo(f"skipped {p}", err=True)
    if result.notice:
        echo(f"notice: {result.notice}", err=True)
    if result.silent:
        return
    if result.reason == "cycle already flushed":
        out(result.as_dict(), as_json, f"cycle {cycle} already flushed in {(result.commit or '')[:12]}; nothing written")
        return
    lines = [f"flushed {len(result.active)} entr{'y' if len(result.active) == 1 else 'ies'} to the daily log"
             + (f" in {result.commit[:12]}" if result.commit else "")]
    lines += [f"  {i} active" for i in result.active]
    if result.proposal:
        lines.append(f"  {', '.join(result.pending_review)} pending_review -> proposal {result.proposal} "
                     f"(review: memrepo review {result.proposal})")
    out(result.as_dict(), as_json, "\n".join(lines))


def _prompt(make: Callable[[str, Any], str], lang: str) -> str:
    """A prompt in ``lang`` shaped by the vault's own template when there is a vault here, the
    built-in one when there is none (a runtime may ask before any vault exists)."""
    try:
        with call.vault() as vault:
            return make(lang, vault)
    except VaultNotFound:
        return make(lang, None)


def _flush_hook(show_prompt: bool, lang: str, as_json: bool) -> None:
    """``flush --hook``: the payload of a Claude Code hook on stdin. With ``--prompt`` (a
    SessionStart hook) print the compaction instructions, which Claude Code adds to the context
    the compactor reads; without it (PostCompact) file the compaction summary. Silent when there
    is nothing to do."""
    payload = api.hook_payload(call.stdin_text())
    if show_prompt:
        echo(_prompt(api.compaction_instructions, lang), nl=False)
        return
    with call.vault() as vault:
        result = api.file_compaction(vault, payload, author=call.state.agent)
    if as_json and not result.silent:
        out(result.as_dict(), True)


@app.command(epilog=params.examples("memrepo prune transcript.json > pruned.json",
                                    "memrepo prune - --keep-last-assistants 5 < transcript.json"))
def prune(transcript: Path = typer.Argument(..., metavar="TRANSCRIPT.json", help="OpenAI or Anthropic message JSON, or Claude Code's transcript .jsonl ('-' for stdin)."),
          keep_last_assistants: int = typer.Option(3, "--keep-last-assistants", help="Never touch the last N assistant turns and their tool results."),
          soft_chars: int = typer.Option(4000, "--soft-chars", help="Tool results longer than this are trimmed to head + tail."),
          head: int = typer.Option(1500, "--head", help="Characters kept from the start of a trimmed result."),
          tail: int = typer.Option(1500, "--tail", help="Characters kept from the end of a trimmed result."),
          hard_ratio: float = typer.Option(0.5, "--hard-ratio", help="Still above this share of the original size: clear the oldest results."),
          as_json: bool = params.JSON):
    """Prune old tool results (soft trim, then hard clear); every result removed is kept as evidence first."""
    text = call.stdin_text() if str(transcript) == "-" else transcript.read_bytes()
    options = api.prune_options(keep_last_assistants=keep_last_assistants, soft_chars=soft_chars, head=head, tail=tail,
                                hard_ratio=hard_ratio)
    with call.vault() as vault:
        result = api.prune_text(vault, text, options, where=str(transcript))
    if as_json:
        out({"transcript": result.transcript, **result.report()}, True)
        return
    echo(result.text(), nl=not result.jsonl)
    echo(f"pruned {result.chars_before:,} -> {result.chars_after:,} characters: trimmed {len(result.trimmed)}, "
         f"cleared {len(result.cleared)} tool results"
         + (f"; evidence committed in {result.commit[:12]}" if result.commit else ""), err=True)
    for r in result.trimmed + result.cleared:
        echo(f"  message {r['message']}: {r['chars']:,} characters -> {r['evidence']}", err=True)
    for pointer in result.outside_git:
        echo(f"  {pointer} is over the evidence size cap: kept in .memrepo/evidence/, not in git", err=True)


@app.command(epilog=params.examples("memrepo evidence evidence:3fa9c1d2e4b5"))
def evidence(pointer: str = typer.Argument(..., metavar="POINTER", help="evidence:<sha256 prefix> or the bare hex prefix."),
             as_json: bool = params.JSON):
    """Print the full text a pruned tool result or a memory's evidence pointer names."""
    with call.vault() as vault:
        found = api.get_evidence(vault, pointer)
    if as_json:
        out({"pointer": found.pointer, "sha256": found.sha, "path": found.path, "text": found.text}, True)
    else:
        echo(found.text, nl=not found.text.endswith("\n"))


@app.command(epilog=params.examples("memrepo export --to openclaw ~/openclaw-workspace", "memrepo export --to jsonl backup.jsonl"))
def export(to: str = typer.Option(..., "--to", help="openclaw (a workspace folder) or jsonl (the import format)."),
           target: Optional[Path] = typer.Argument(None, metavar="[TARGET]", help="Workspace folder (openclaw) or FILE (jsonl; default stdout)."),
           as_json: bool = params.JSON):
    """Export the vault: an OpenClaw workspace from the active memories, or every memory as import JSONL."""
    check_choice("to", to, api.export_formats())
    if to == "jsonl":
        with call.vault() as vault:
            lines = list(api.export_jsonl(vault))
        if target is None:
            for line in lines:
                echo(line)
        else:
            target.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
            out({"file": str(target), "memories": len(lines)}, as_json, f"wrote {len(lines)} memories to {target}")
        return
    if target is None:
        raise UsageError("give the OpenClaw workspace folder: memrepo export --to openclaw WORKSPACE")
    with call.vault() as vault:
        result = api.export_openclaw(vault, target)
    out(result.as_dict(), as_json, f"wrote {', '.join(result.files)} in {target}: {result.written} memories"
        + (f" ({result.left_out} over OpenClaw's budgets, named on pointer lines)" if result.left_out else "")
        + (f"; the files it replaced are kept in {result.backup}" if result.backup else ""))


@app.command(epilog=params.examples("memrepo --vault ~/agent-memory mcp", "memrepo mcp --agent executor"))
def mcp(vault: Optional[str] = typer.Option(None, "--vault", help="Vault to serve (default: the global --vault, or found as git does).")):
    """Run the MCP server on stdio (tools: memory_recall, memory_search, memory_get, memory_write, ...).

    --agent NAME (global, before or after the command) is recorded as the author of writes."""
    from memrepo.mcp.server import serve  # the other interface: the SDK loads only for this command
    serve(vault or call.state.vault_path, call.state.agent)
