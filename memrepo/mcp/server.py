"""``memrepo mcp``: a stdio MCP server over :mod:`memrepo.api` (the one owner of the ``mcp`` SDK).

The server keeps one vault open for its lifetime, so the catalog, the search index's
searcher and the configuration stay warm between calls; every call still catches up with
git first, so commits made by other processes (hand edits, the CLI, another agent) are seen
on the next call. Tools return JSON; a memrepo error reaches the client as a tool error
carrying the same message the CLI prints, never a traceback.
"""
from __future__ import annotations

import json
import warnings
from typing import Any, Callable, Literal

from mcp.server.fastmcp import Context, FastMCP
from mcp.types import CallToolResult, TextContent

from memrepo import api
from memrepo.errors import MemrepoError
from memrepo.mcp import memory_verbs

INSTRUCTIONS = """memrepo is your long-term memory: a git repository of short markdown memories that people review.
- At the start of a task read the `memrepo://context` resource (identity, principles, constraints, preferences).
- Before answering something that may depend on earlier work, call memory_recall with the user's message.
- Cite the [id] of every memory you rely on.
- Write only short, hard, reusable entries (decisions, constraints, preferences, project state, evidence pointers);
  never raw logs, long JSON or chit-chat. Risky writes (constraints, policies, overrides, long-term layers) become
  proposals a person reviews: they are not active until applied."""


def _result(call: Callable[[], Any]) -> CallToolResult:
    try:
        data = call()
    except MemrepoError as e:
        return CallToolResult(content=[TextContent(type="text", text=str(e))], isError=True)
    if isinstance(data, str):  # the memory verbs answer in the memory tool's own words
        return CallToolResult(content=[TextContent(type="text", text=data)])
    structured = data if isinstance(data, dict) else {"result": data}
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(data, ensure_ascii=False))],
                          structuredContent=structured)


class Memory:
    """The server's state: one vault, opened once (warm catalog, index and config)."""

    def __init__(self, vault_path: str | None = None, agent: str | None = None):
        self.vault = api.Vault.find(explicit=vault_path)
        self.agent = agent

    def close(self) -> None:
        self.vault.close()

    @staticmethod
    def client(ctx) -> str | None:
        """The client's name from its MCP initialize request (``clientInfo.name``)."""
        try:
            info = ctx.session.client_params.clientInfo if ctx is not None and ctx.session.client_params else None
        except (AttributeError, ValueError):
            return None
        return info.name if info is not None and info.name else None

    def writer(self, ctx) -> str:
        """Who an MCP write is recorded as: the --agent name, else the client's own name."""
        return self.agent or self.client(ctx) or "mcp-client"

    def private(self) -> list:
        """The agent's private vault, if it has one (opened per call: it may appear any time)."""
        return api.visible_vaults(self.vault, self.agent)[1:] if self.agent else []

    def read(self, fn):
        """``fn(also)`` with the agent's private vault, closed afterwards."""
        also = self.private()
        try:
            return fn(also)
        finally:
            for v in also:
                v.close()


def build_server(vault_path: str | None = None, agent: str | None = None) -> FastMCP:
    """An MCP server for the vault at ``vault_path`` (found as the CLI finds it when None)."""
    state = Memory(vault_path, agent)
    vault = state.vault
    with warnings.catch_warnings():
        # the SDK's settings model, read by newer pydantic-settings, warns on every start
        # about a forward reference it never resolves (its value is the default either way)
        warnings.filterwarnings("ignore", message=r"Field 'lifespan' has an incomplete definition")
        server = FastMCP("memrepo", instructions=INSTRUCTIONS, log_level="WARNING")

    @server.tool()
    def memory_recall(text: str, budget: int = 4000, session: str | None = None,
                      subject: str | None = None) -> CallToolResult:
        """Recall the memories relevant to the user's latest message (or a transcript) as one block to read,
        best first; the whole result fits in `budget` characters. Call it before answering anything that may depend on earlier
        work; cite the [id]s you use. `nothing_relevant: true` means memory has nothing on it: do not guess."""
        return _result(lambda: state.read(lambda also: api.recall_within(
            vault, text, budget=budget, session=session, subject=subject, also=also)))

    @server.tool()
    def memory_search(query: str, limit: int = 10, subject: str | None = None, layer: str | None = None,
                      kind: str | None = None, tag: str | None = None, include_history: bool = False) -> CallToolResult:
        """Search active memories by free text (Chinese and English); returns ids, summaries and snippets.
        Use memory_get for a full memory. `include_history` adds superseded versions (for 'what was it before?')."""
        def run():
            from memrepo.retrieval.search import result_dict
            from memrepo.team import scopes
            result, _ = scopes.search(vault, query, agent=state.agent, limit=limit, subject=subject, layer=layer,
                                      kind=kind, tag=tag, history=include_history)
            return result_dict(result)
        return _result(run)

    @server.tool()
    def memory_get(id: str) -> CallToolResult:
        """One memory in full (front matter and body) by its id, as it is on the main branch."""
        def run():
            from memrepo.team import scopes
            m = scopes.get(vault, id, agent=state.agent)
            return {**dict(m.meta), "path": m.path, "body": m.body}
        return _result(run)

    @server.tool()
    def memory_write(summary: str, body: str = "", subject: str = "general", kind: str | None = None,
                     fact: str | None = None, layer: Literal["L1", "L2", "L3", "L4"] | None = None,
                     tags: list[str] | None = None, evidence: list[str] | None = None,
                     links: list[str] | None = None, session: str | None = None,
                     source: Literal["user", "model-inference", "tool"] = "model-inference",
                     scope: Literal["shared"] | None = None, confidence: float | None = None,
                     request_id: str | None = None, ctx: Context | None = None) -> CallToolResult:
        """Write one memory: short, hard, reusable (a decision with its reason, a constraint, a preference,
        project state, an evidence pointer such as evidence:<sha> or path#L10-L20), never raw output.
        `source` says what you can vouch for: model-inference (the default: your own conclusion), tool (a
        tool's output showed it), user (only when you quote what the user said). The memory is recorded as
        yours (your agent name), never as the user's.
        Low-risk L1 entries become active at once; constraints, policies, permissions, overrides of an active
        fact, your own inferences and anything above L1 go to review: the answer says pending_review and
        the proposal id, and the memory is not active until a person applies it.
        `scope: "shared"` proposes to the team's shared pool instead (as `memrepo propose`): a fact needs
        subject + fact, knowledge (kind knowledge/pattern/principle) needs `confidence`; the pool reinforces
        a duplicate, writes a new fact, or settles a conflict by the vault's arbitration policy; above L1 it
        goes to review too. `request_id` (e.g. your turn id): call again with the same id after a timeout and
        you get the first call's answer; nothing is written twice."""
        agent = state.writer(ctx)
        fields = {"summary": summary, "subject": subject, "kind": kind, "fact": fact, "layer": layer,
                  "tags": tags, "evidence": evidence, "links": links, "session": session, "source": source,
                  "x-written-via": f"MCP client {state.client(ctx) or 'unnamed'}"}

        def run():
            level = layer or "L1"
            review = (f"written by agent {agent} into long-term layer {level} "
                      "(long-term layers change only through review)") if level != "L1" else None
            if scope == "shared":
                return api.propose(vault, {**fields, "confidence": confidence}, body, agent=agent, review=review,
                                   as_agent=True, request_id=request_id).as_dict()
            return api.add(vault, {**fields, "layer": level, "confidence": confidence}, body,
                           author=agent, review=review, agent=agent, request_id=request_id).as_dict()
        return _result(run)

    @server.tool()
    def memory_flush(cycle: str, text: str, session: str | None = None) -> CallToolResult:
        """Before the context is compacted: file what must survive, once per compaction cycle. `text` is JSON
        entries or the markdown template (## What / ## Decision / ## Why / ## Evidence / ## Next, entries
        separated by ---); NO_REPLY or empty writes nothing. Keep each section a few lines; cite evidence pointers."""
        return _result(lambda: api.flush(vault, text, cycle=cycle, session=session, author=state.agent).as_dict())

    @server.tool()
    def memory_history(subject: str, fact: str) -> CallToolResult:
        """Every version a fact (subject + fact key) ever had, oldest first, with its status: use it to answer
        'what was it before?' or 'when did this change?'."""
        return _result(lambda: {"versions": [v.as_dict() for v in api.fact_history(vault, subject, fact)]})

    @server.tool()
    def memory_why(id: str) -> CallToolResult:
        """Why a memory is active: who wrote it, which proposal, who applied it and when, what it superseded,
        its evidence and its rollback point."""
        return _result(lambda: api.why(vault, id).as_dict())

    @server.tool()
    def proposals_list(include_closed: bool = False) -> CallToolResult:
        """Review proposals waiting for a person (with include_closed, applied and rejected ones too)."""
        return _result(lambda: {"proposals": [p.as_dict() for p in api.list_proposals(vault, include_closed=include_closed)]})

    @server.resource("memrepo://context", name="context", mime_type="text/plain",
                     description="The session-start block: identity, principles, constraints and preferences.")
    def context_resource() -> str:
        try:
            return state.read(lambda also: api.context(vault, also=also)).text
        except MemrepoError as e:
            return f"memrepo: {e}"

    memory_verbs.register(server, state, _result)
    server._memrepo_state = state  # type: ignore[attr-defined]  # for closing and tests
    return server


def serve(vault_path: str | None = None, agent: str | None = None) -> None:
    """Run the server on stdin/stdout until the client goes away."""
    server = build_server(vault_path, agent)
    try:
        server.run("stdio")
    finally:
        server._memrepo_state.close()  # type: ignore[attr-defined]
