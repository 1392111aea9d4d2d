"""The bodies of the per-turn commands (``add``, ``search``, ``recall``, ``context``, the hook),
free of typer.

An agent runs these on every turn and a hook on every commit, so they must start fast:
:mod:`memrepo.cli.fast` parses their options itself and calls these functions directly;
the typer commands in :mod:`memrepo.cli.app` (which declare the options, the help and the
usage errors) call the same functions. Parameters are named as the typer commands' are.
Output goes through :func:`echo`, which writes as ``typer.echo`` does, so both paths print
the same bytes in the same order.
"""
from __future__ import annotations

import json
import sys
from contextlib import contextmanager


class State:
    """The global options of this call (``--vault``, ``--agent``, ``--json``)."""

    vault_path: str | None = None
    agent: str | None = None
    json: bool = False
    vaults = None  # a resident process's open vaults (memrepo.cli.daemon.Vaults); else opened per call


state = State()


class BadParameter(Exception):
    """A usage error a command finds itself; the typer path shows it with the command's usage."""


def set_globals(vault: str | None, agent: str | None, as_json: bool) -> None:
    """What the global options mean, for every command (the typer app's callback calls this)."""
    import os
    state.vault_path = vault
    state.json = state.json or as_json
    state.agent = None
    if agent:
        from memrepo.team import scopes
        state.agent = scopes.current_agent(agent)
        os.environ["MEMREPO_AGENT"] = agent  # the library and the hooks it triggers see the same agent


def echo(text: str = "", *, err: bool = False, nl: bool = True) -> None:
    """Write ``text`` and flush, as ``typer.echo`` does (stdout and stderr keep their order)."""
    stream = sys.stderr if err else sys.stdout
    if stream is None:
        return
    stream.write(text + ("\n" if nl else ""))
    stream.flush()


def vault():
    if state.vaults is not None:
        return state.vaults.open(state.vault_path)
    from memrepo.store.vault import Vault
    return Vault.find(explicit=state.vault_path)


def out(data, as_json: bool, text: str | None = None) -> None:
    if as_json:
        echo(json.dumps(data, ensure_ascii=False, indent=None))
    elif text is not None:
        echo(text)


def stdin_text() -> str:
    """Standard input as UTF-8 text ("" on a terminal); other bytes are a one-line error."""
    if sys.stdin is None or sys.stdin.isatty():
        return ""
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        from memrepo.errors import UsageError
        line = data[:e.start].count(b"\n") + 1
        raise UsageError(f"stdin:line {line}: byte {data[e.start]:#04x} is not UTF-8; send UTF-8 text") from None


# An option whose parameter has one of these names is checked, in every command: enum values
# against the schema (with "did you mean"), dates as a date or a date-time with a zone.
ENUM_PARAMS = ("layer", "kind", "status", "source")
OTHER_CHOICES = {"intent": "INTENTS", "mode": "MERGE_MODES"}  # option values that are not schema fields
DATE_PARAMS = ("since", "until", "expires", "now")
CHECKED_PARAMS = (*ENUM_PARAMS, *OTHER_CHOICES, *DATE_PARAMS)


def checked_option(name: str, value):
    """``value`` of option ``name`` once checked (a UsageError when it is not accepted);
    ``--expires`` becomes the date-time the front matter keeps."""
    from memrepo import model
    checked = None
    for item in value if isinstance(value, list | tuple) else [value]:
        if name in DATE_PARAMS:
            checked = model.parse_when(name, item)
        else:
            checked = model.check_choice(name, item, getattr(model, OTHER_CHOICES[name]) if name in OTHER_CHOICES else None)
    if name == "expires" and value is not None:
        return checked.isoformat()
    return value


# ------------------------------------------------------------------ write

def add(*, subject, fact, kind, layer, summary, source, author, tag, link, evidence, affects, session, scope,
        weight, confidence, expires, memory_id, body, push, remote, files, skip_invalid, as_json,
        request_id=None, call_id=None) -> None:
    if files:  # hand-written files: the typer command's _add_files (memrepo/cli/app.py) writes them
        raise BadParameter("--file")
    from memrepo.review import writes as memories
    if body is None:
        body = stdin_text()
    fields = {"id": memory_id, "subject": subject, "fact": fact, "kind": kind, "layer": layer, "summary": summary,
              "source": source, "author": author, "tags": tag, "links": link, "evidence": evidence,
              "affects": affects, "session": session, "scope": scope, "weight": weight,
              "confidence": confidence, "expires": expires}
    with vault() as v:
        if scope is not None:
            from memrepo.team import scopes
            result = scopes.add(v, fields, body, agent=state.agent, author=author, push=push, remote=remote,
                                request_id=request_id, call_id=call_id)
        else:
            result = memories.add(v, fields, body, author=author, push=push, remote=remote, request_id=request_id,
                                  call_id=call_id)
    _report_add(result, push=push, remote=remote, as_json=as_json)


def _report_add(result, *, push: bool, remote: str, as_json: bool) -> None:
    where = f"commit {result.commit[:12]}" if result.commit else f"proposal {result.proposal} (review: memrepo review {result.proposal})"
    if push and result.proposal:
        where += f"; pushed branch proposal/{result.proposal} to {remote}: open a pull request from it"
    out(result.as_dict(), as_json, f"{result.id} {result.status} ({result.risk} risk: {result.risk_reason}) -> {where}")


STOPPED_UNWRITTEN = ("memrepo: the background server stopped during the call before anything was written "
                     "(nothing was written); run the command again")


def settle_add(*, vault_path: str | None, call_id: str, push: bool, remote: str, as_json: bool) -> int:
    """The answer to an ``add`` the background server was killed during: the write it made
    (found by its call id once a killed write is finished), exit 0; or that nothing was
    written, exit 75 (busy: run it again)."""
    from memrepo.review import requests
    from memrepo.review import writes as memories
    state.vault_path, state.json = vault_path, as_json
    with vault() as v:
        commit = requests.find_call(v, call_id)
        if commit is None:
            echo(STOPPED_UNWRITTEN, err=True)
            return 75
        _report_add(memories.result_of(v, commit), push=push, remote=remote, as_json=as_json)
    return 0


# ------------------------------------------------------------------ search

def search(*, query, limit, subject, layer, kind, tag, since, deep, include_history, advanced, intent, queries,
           session, log_recalls, as_json) -> None:
    if queries is None and query is None:
        raise BadParameter("give a QUERY or --queries FILE")
    from memrepo.retrieval import search as svc
    with vault() as v:
        if queries is not None:
            batch = svc.read_queries(queries)
            results, report = svc.search_many(v, [q for _, q in batch], session=session, log_recalls=log_recalls)
            if report.notice:
                echo(f"notice: {report.notice}", err=True)
            for (qid, _), result in zip(batch, results):
                echo(json.dumps({"qid": qid, **svc.result_dict(result)}, ensure_ascii=False))
            return
        filters = dict(limit=limit, subject=subject, layer=layer, kind=kind, tag=tag, since=since,
                       deep=deep, history=include_history, advanced=advanced, intent=intent)
        if state.agent:
            from memrepo.team import scopes
            result, report = scopes.search(v, query, agent=state.agent, session=session,
                                           log_recalls=log_recalls, **filters)
        else:
            result, report = svc.search(v, query, session=session, log_recalls=log_recalls, **filters)
    if report.notice:
        echo(f"notice: {report.notice}", err=True)
    if as_json:
        out(svc.result_dict(result), True)
        return
    if result.nothing_relevant:
        echo("nothing relevant")
        return
    from memrepo.cli.output import plain, table
    echo(table(["#", "ID", "SCORE", "LAYER", "STATUS", "SUBJECT", "SUMMARY / SNIPPET"],
               [[str(i), h.id, f"{h.score:.3f}", h.layer, h.status, f"{h.subject}{' ' + h.fact if h.fact else ''}",
                 f"{plain(h.summary)} — {plain(h.snippet)}" if h.snippet and plain(h.snippet) != plain(h.summary) else plain(h.summary)]
                for i, h in enumerate(result.hits, start=1)]))


# ------------------------------------------------------------------ agents

@contextmanager
def _private_vaults(v):
    """The acting agent's private vault (as a list: none without --agent or before its first
    private write), read together with the shared one and closed afterwards."""
    if not state.agent:
        yield []
        return
    from memrepo.team import scopes
    found = scopes.visible_vaults(v, state.agent)[1:]
    try:
        yield found
    finally:
        for private in found:
            private.close()


def _hook_safe(fn):
    """Run a hook-mode command: a failure is one line on stderr and exit 1, which agent
    runtimes show without blocking the turn (Claude Code blocks a prompt on exit 2).
    Returns (result, None), or (None, exit code) after a failure."""
    from memrepo.errors import MemrepoError
    try:
        return fn(), None
    except MemrepoError as e:
        echo(f"memrepo: {e}", err=True)
        return None, 1


def recall(*, text, budget, session, subject, intent, hook, as_json) -> int | None:
    from memrepo.agents import recall as svc
    from memrepo.agents.transcript import hook_payload

    def run():
        query, sess = text, session
        if hook:
            payload = hook_payload(stdin_text())
            query, sess = payload["prompt"], session or payload["session_id"]
        elif query is None:
            query = stdin_text()
        with vault() as v, _private_vaults(v) as also:
            return svc.recall(v, query, budget=budget, session=sess, subject=subject, intent=intent, also=also)
    result, failed = _hook_safe(run) if hook else (run(), None)
    if failed:
        return failed
    if as_json:
        out(result.as_dict(), True)
    elif result.text:
        echo(result.text)
    return None


def context(*, budget, subject, hook, as_json) -> int | None:
    from memrepo.agents import context as svc
    from memrepo.agents.transcript import hook_payload

    def run():
        if hook:
            hook_payload(stdin_text())
        with vault() as v, _private_vaults(v) as also:
            return svc.context(v, budget=budget, subject=subject, also=also)
    packed, failed = _hook_safe(run) if hook else (run(), None)
    if failed:
        return failed
    if as_json:
        out({"memories": list(packed.memories), "chars": packed.chars}, True)
    elif packed.text:
        echo(packed.text)
    return None


# ------------------------------------------------------------------ hooks

def hook_pre_commit() -> int | None:
    """Validate what is staged (run by git); 1 when the commit is refused."""
    from pathlib import Path

    from memrepo.review import hooks
    problems = hooks.run_pre_commit(Path.cwd())
    if not problems:
        return None
    echo("memrepo: commit refused:", err=True)
    for p in problems:
        echo(f"  {p}", err=True)
    echo("Fix the files (or 'memrepo validate' to see all), then commit again.", err=True)
    return 1


def hook_pre_merge_commit() -> int | None:
    """Validate a merge before git records it (run by git)."""
    return hook_pre_commit()
