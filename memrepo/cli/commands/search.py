"""Search: search, reindex, status, useful."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from memrepo import api
from memrepo.cli import call, output, params
from memrepo.cli.output import echo, out

app = typer.Typer()


@app.command(epilog=params.examples("memrepo search \"database pool size\" --subject project-alpha",
                                    "memrepo search 数据库 --layer L2 --since 2026-11-01 --json"))
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
           as_json: bool = params.JSON):
    """Search active memories (best first); says so honestly when nothing is relevant.

    SCORE (0-1) says how well a hit matches, comparably across queries: the best hit scores its
    own match, the idf-weighted share of the query's words it contains (words no memory has
    do not count; with --json: keyword_score), mixed with the cosine of meaning (semantic_score) when the semantic index is
    on; each other hit scores that times its ranking value (BM25F, meaning, same-session
    support, heat from recalls and 'useful' marks) relative to the best, so scores follow the
    order. About 0.8-1: every query word found; about 0.3: a few words or only the meaning.
    It is not a probability."""
    if queries is not None:
        with call.vault() as vault:
            batch = api.read_queries(queries)
            results, report = api.search_many(vault, [q for _, q in batch], session=session, log_recalls=log_recalls)
        if report.notice:
            echo(f"notice: {report.notice}", err=True)
        for (qid, _), result in zip(batch, results):
            echo(json.dumps({"qid": qid, **api.result_dict(result)}, ensure_ascii=False))
        return
    if query is None:
        raise typer.BadParameter("give a QUERY or --queries FILE")
    with call.vault() as vault:
        result, report = api.search(vault, query, agent=call.state.agent, session=session, log_recalls=log_recalls,
                                    limit=limit, subject=subject, layer=layer, kind=kind, tag=tag, since=since,
                                    deep=deep, history=include_history, advanced=advanced, intent=intent)
    if report.notice:
        echo(f"notice: {report.notice}", err=True)
    if as_json:
        out(api.result_dict(result), True)
    elif result.nothing_relevant:
        echo("nothing relevant")
    else:
        echo(output.table(["#", "ID", "SCORE", "LAYER", "STATUS", "SUBJECT", "SUMMARY / SNIPPET"],
                          [[str(i), h.id, f"{h.score:.3f}", h.layer, h.status, f"{h.subject}{' ' + h.fact if h.fact else ''}",
                            _summary_and_snippet(h.summary, h.snippet)] for i, h in enumerate(result.hits, start=1)]))


def _summary_and_snippet(summary: str, snippet: str | None) -> str:
    summary, snippet = output.plain(summary), output.plain(snippet or "")
    return f"{summary} — {snippet}" if snippet and snippet != summary else summary


@app.command(epilog=params.examples("memrepo reindex", "memrepo reindex --wait"))
def reindex(wait: bool = typer.Option(False, "--wait", help="Build the semantic vectors here, with a progress bar, "
                                      "instead of in the background (a vault of up to 1,000 memories: here either way)."),
            as_json: bool = params.JSON):
    """Rebuild the search index from the memory files, then the semantic vectors (in the
    background in a large vault: memrepo status shows how far)."""
    with call.vault() as vault:
        count, state, vectors = api.reindex(vault, wait=wait, progress=output.progress("reindex"),
                                            vector_progress=output.progress("vectors"))
        building = api.building_notice(vault) if state == "building" else None
    if state == "unavailable":
        echo(f"notice: {api.unavailable_notice()}", err=True)
    if building:
        echo(f"notice: {building}", err=True)
    out({"indexed": count, "vectors": vectors, "semantic": state}, as_json,
        f"indexed {count} memories" + (f", {vectors} vectors" if state == "hybrid" else ""))


@app.command(epilog=params.examples("memrepo status", "memrepo status --json"))
def status(as_json: bool = params.JSON):
    """Show the search index and the semantic vectors: at HEAD or behind, and a build's
    progress (N of M memories, time left) while one runs in the background."""
    with call.vault() as vault:
        found = api.status(vault)
    out(found, as_json, _render_status(found))


@app.command(epilog=params.examples("memrepo useful mem_20261201_7k3p9x --session s-42"))
def useful(memory_id: str = typer.Argument(..., metavar="ID"),
           session: Optional[str] = typer.Option(None, help="Session that found it useful."),
           as_json: bool = params.JSON):
    """Mark a recalled memory as useful: it ranks higher next time (heat)."""
    with call.vault() as vault:
        notice = api.mark_useful(vault, memory_id, session=session)
    if notice:
        echo(f"notice: {notice}", err=True)
    out({"id": memory_id, "useful": True}, as_json, f"marked {memory_id} useful")


def _render_status(found: dict) -> str:
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
    lines.append(f"semantic  {_semantic_line(found['semantic'], found['vectors'])}")
    return "\n".join(lines)


def _semantic_line(state: str, v: dict) -> str:
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
