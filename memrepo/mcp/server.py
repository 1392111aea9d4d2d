"""``memrepo mcp``: a stdio MCP server over :mod:`memrepo.api` (the one owner of the ``mcp`` SDK).

The server keeps one vault open for its lifetime, so the catalog, the search index's
searcher and the configuration stay warm between calls; every call still catches up with
git first, so commits made by other processes (hand edits, the CLI, another agent) are seen
on the next call. Tools return JSON; a memrepo error reaches the client as a tool error
carrying the same message the CLI prints, never a traceback. Every parameter has a
description and its bounds in the tool's input schema; ``memory_write`` takes the fields the
field table (``memrepo.model.FIELDS``) says an agent may give. A bad argument is a tool error
of one line naming the parameter, never the validator's internals.
"""
from __future__ import annotations

import inspect
import json
import warnings
from typing import TYPE_CHECKING, Annotated, Any, Callable, Literal, Optional, TypeAlias

from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import Field, ValidationError

from memrepo import __version__, api
from memrepo.errors import MemrepoError
from memrepo.mcp import memory_verbs
from memrepo.model import FIELD, INTENTS, given_by

INSTRUCTIONS = """memrepo is your long-term memory: a git repository of short markdown memories that people review.
- At the start of a task read the `memrepo://context` resource (identity, principles, constraints, preferences).
- Before answering something that may depend on earlier work, call memory_recall with the user's message.
- Cite the [id] of every memory you rely on.
- Write only short, hard, reusable entries (decisions, constraints, preferences, project state, evidence pointers);
  never raw logs, long JSON or chit-chat. Risky writes (constraints, policies, overrides, long-term layers) become
  proposals a person reviews: they are not active until applied."""

MAX_BUDGET = 100_000  # characters a recall may return
MAX_LIMIT = 100       # hits a search may return

# Parameters several tools share.
Subject = Annotated[Optional[str], Field(description="Only memories about this subject (an entity such as user or "
                                                     "project-alpha).", max_length=FIELD["subject"].max_length)]
Session = Annotated[Optional[str], Field(description="The agent session: the call is logged with it (heat, "
                                                     "co-recall).", max_length=FIELD["session"].max_length)]
MemoryId = Annotated[str, Field(description="A memory id, as search and recall return it (mem_20261201_7k3p9x).",
                                min_length=1, max_length=128)]  # model.ID_RE


def _choice(name: str) -> Any:
    """``Literal`` of a field's choices (those an agent may give)."""
    field = FIELD[name]
    return Literal[field.agent_choices or field.choices]


if TYPE_CHECKING:
    Layer: TypeAlias = str
    Kind: TypeAlias = str
else:  # the input schema's enums come from the field table
    Layer, Kind = _choice("layer"), _choice("kind")


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
    """The server's state: one vault, opened once (warm catalog, index and config), and the
    acting agent (its private memories are read with the shared ones; it authors the writes)."""

    def __init__(self, vault_path: str | None = None, agent: str | None = None):
        self.vault = api.Vault.find(explicit=vault_path)
        self.agent = api.current_agent(agent)

    def close(self) -> None:
        self.vault.close()

    @staticmethod
    def client(ctx: Context | None) -> str | None:
        """The client's name from its MCP initialize request (``clientInfo.name``)."""
        try:
            info = ctx.session.client_params.clientInfo if ctx is not None and ctx.session.client_params else None
        except (AttributeError, ValueError):
            return None
        return info.name if info is not None and info.name else None

    def writer(self, ctx: Context | None) -> str:
        """Who an MCP write is recorded as: the --agent name, else the client's own name."""
        return self.agent or self.client(ctx) or "mcp-client"


class _Server(FastMCP):
    """FastMCP whose argument errors are one line naming the parameter (no validator internals)
    and which refuses a NUL byte in any argument before a tool runs."""

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        for key, value in (arguments or {}).items():
            if _has_nul(value):
                raise ToolError(f"{name}: argument {key!r} contains a NUL byte (\\x00); memrepo keeps text: remove it")
        try:
            return await super().call_tool(name, arguments)
        except ToolError as e:
            if isinstance(e.__cause__, ValidationError):
                raise ToolError(f"{name}: {argument_errors(e.__cause__)}") from None
            raise


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, list | tuple):
        return any(_has_nul(v) for v in value)
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    return False


def argument_errors(error: ValidationError) -> str:
    """What was wrong with the arguments, on one line: ``name: what is wanted`` per problem."""
    said = []
    for problem in error.errors(include_url=False):
        where = ".".join(str(p) for p in problem["loc"]) or "arguments"
        message = "is required" if problem["type"] == "missing" else problem["msg"][0].lower() + problem["msg"][1:]
        said.append(f"{where}: {message}")
    return "; ".join(dict.fromkeys(said))


def _write_parameters() -> list[inspect.Parameter]:
    """``memory_write``'s parameters: the summary and body, the fields the field table lets an
    agent give (with their descriptions, enums and bounds), and where the memory goes."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    found = [inspect.Parameter("summary", keyword, annotation=Annotated[str, Field(
                 description=FIELD["summary"].help.split(" (")[0] + " (at most "
                 f"{FIELD['summary'].max_length} characters): the memory itself, short and hard.",
                 min_length=1, max_length=FIELD["summary"].max_length)]),
             inspect.Parameter("body", keyword, default="", annotation=Annotated[str, Field(
                 description="Markdown body: the reason, details, evidence pointers (optional).")])]
    for f in given_by("memory_write"):
        if f.name == "summary":
            continue
        if f.type == "choice":
            inner: Any = _choice(f.name)
        elif f.type == "number":
            inner = Annotated[float, Field(ge=f.minimum, le=f.maximum)]
        elif f.many:
            inner = list[Annotated[str, Field(min_length=1, max_length=500)]]
        else:
            inner = Annotated[str, Field(min_length=1, max_length=f.max_length)]
        found.append(inspect.Parameter(f.name, keyword, default=None,
                                       annotation=Annotated[Optional[inner], Field(description=f.help)]))
    found.append(inspect.Parameter("scope", keyword, default=None, annotation=Annotated[Optional[Literal["shared"]], Field(
        description="\"shared\": propose to the team's shared pool instead (as `memrepo propose`).")]))
    found.append(inspect.Parameter("request_id", keyword, default=None, annotation=Annotated[Optional[str], Field(
        description="Idempotency key (e.g. your turn id): call again with the same id after a timeout and you get the "
                    "first call's answer; nothing is written twice.", min_length=1, max_length=200)]))
    found.append(inspect.Parameter("ctx", keyword, default=None, annotation=Optional[Context]))
    return found


def build_server(vault_path: str | None = None, agent: str | None = None) -> FastMCP:
    """An MCP server for the vault at ``vault_path`` (found as the CLI finds it when None)."""
    state = Memory(vault_path, agent)
    vault = state.vault
    with warnings.catch_warnings():
        # the SDK's settings model, read by newer pydantic-settings, warns on every start
        # about a forward reference it never resolves (its value is the default either way)
        warnings.filterwarnings("ignore", message=r"Field 'lifespan' has an incomplete definition")
        server = _Server("memrepo", instructions=INSTRUCTIONS, log_level="WARNING")
    server._mcp_server.version = __version__  # serverInfo.version: memrepo's, not the SDK's

    @server.tool()
    def memory_recall(text: Annotated[str, Field(description="The user's latest message, or a transcript (its last "
                                                             "user turn is used).")],
                      budget: Annotated[int, Field(description="Most characters of memory to return.", ge=1,
                                                   le=MAX_BUDGET)] = 4000,
                      session: Session = None, subject: Subject = None) -> CallToolResult:
        """Recall the memories relevant to the user's latest message (or a transcript) as one block to read,
        best first; the whole result fits in `budget` characters. Call it before answering anything that may depend on earlier
        work; cite the [id]s you use. `nothing_relevant: true` means memory has nothing on it: do not guess."""
        return _result(lambda: api.recall_within(vault, text, agent=state.agent, budget=budget, session=session,
                                                 subject=subject))

    @server.tool()
    def memory_search(query: Annotated[str, Field(description="Free text, Chinese or English.", min_length=1)],
                      limit: Annotated[int, Field(description="Most hits to return.", ge=1, le=MAX_LIMIT)] = 10,
                      subject: Subject = None,
                      layer: Annotated[Optional[Layer], Field(description="Only this layer.")] = None,
                      kind: Annotated[Optional[Kind], Field(description="Only this kind.")] = None,
                      tag: Annotated[Optional[str], Field(description="Only memories with this tag.",
                                                          max_length=500)] = None,
                      include_history: Annotated[bool, Field(description="Also superseded and rolled-back versions "
                                                                         "(for 'what was it before?').")] = False,
                      intent: Annotated[Optional[Literal[INTENTS]], Field(  # type: ignore[valid-type]
                          description="The retrieval route instead of the guess from the query.")] = None,
                      ) -> CallToolResult:
        """Search active memories by free text (Chinese and English); returns ids, summaries and snippets.
        Use memory_get for a full memory. `include_history` adds superseded versions (for 'what was it before?')."""
        def run():
            result, _ = api.search(vault, query, agent=state.agent, limit=limit, subject=subject, layer=layer,
                                   kind=kind, tag=tag, history=include_history, intent=intent)
            return api.result_dict(result)
        return _result(run)

    @server.tool()
    def memory_get(id: MemoryId) -> CallToolResult:
        """One memory in full (front matter and body) by its id, as it is on the main branch."""
        def run():
            m = api.get(vault, id, agent=state.agent)
            return {**dict(m.meta), "path": m.path, "body": m.body}
        return _result(run)

    def memory_write(**given: Any) -> CallToolResult:
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
        body, scope = given.pop("body", ""), given.pop("scope", None)
        request_id, ctx = given.pop("request_id", None), given.pop("ctx", None)
        agent = state.writer(ctx)
        fields = {"subject": "general", "source": "model-inference", **{k: v for k, v in given.items() if v is not None},
                  "x-written-via": f"MCP client {state.client(ctx) or 'unnamed'}"}

        def run():
            level = fields.get("layer") or "L1"
            review = (f"written by agent {agent} into long-term layer {level} "
                      "(long-term layers change only through review)") if level != "L1" else None
            if scope == "shared":
                return api.propose(vault, fields, body, agent=agent, review=review, as_agent=True,
                                   request_id=request_id).as_dict()
            return api.add(vault, {**fields, "layer": level}, body, agent=agent, author=agent, review=review,
                           request_id=request_id).as_dict()
        return _result(run)

    parameters = _write_parameters()
    memory_write.__signature__ = inspect.Signature(parameters,  # type: ignore[attr-defined]
                                                   return_annotation=CallToolResult)
    # the SDK finds the Context parameter (the client's name) through the annotations
    memory_write.__annotations__ = {**{p.name: p.annotation for p in parameters}, "return": CallToolResult}
    server.tool()(memory_write)

    @server.tool()
    def memory_flush(cycle: Annotated[str, Field(description="The compaction cycle: each is flushed at most once "
                                                             "per session.", min_length=1, max_length=200)],
                     text: Annotated[str, Field(description="JSON entries or the markdown template (## What / ## "
                                                            "Decision / ## Why / ## Evidence / ## Next, entries "
                                                            "separated by ---); NO_REPLY writes nothing.")],
                     session: Session = None) -> CallToolResult:
        """Before the context is compacted: file what must survive, once per compaction cycle. `text` is JSON
        entries or the markdown template (## What / ## Decision / ## Why / ## Evidence / ## Next, entries
        separated by ---); NO_REPLY or empty writes nothing. Keep each section a few lines; cite evidence pointers."""
        return _result(lambda: api.flush(vault, text, cycle=cycle, session=session, author=state.agent).as_dict())

    @server.tool()
    def memory_history(subject: Annotated[str, Field(description="The fact's subject (user, project-alpha).",
                                                     min_length=1, max_length=FIELD["subject"].max_length)],
                       fact: Annotated[str, Field(description="The fact key (ui.theme, release.auto_publish).",
                                                  min_length=1, max_length=FIELD["fact"].max_length)]) -> CallToolResult:
        """Every version a fact (subject + fact key) ever had, oldest first, with its status: use it to answer
        'what was it before?' or 'when did this change?'."""
        return _result(lambda: {"versions": [v.as_dict() for v in api.fact_history(vault, subject, fact)]})

    @server.tool()
    def memory_why(id: MemoryId) -> CallToolResult:
        """Why a memory is active: who wrote it, which proposal, who applied it and when, what it superseded,
        its evidence and its rollback point."""
        return _result(lambda: api.why(vault, id).as_dict())

    @server.tool()
    def proposals_list(include_closed: Annotated[bool, Field(description="Also applied and rejected proposals, "
                                                                         "with their outcome.")] = False) -> CallToolResult:
        """Review proposals waiting for a person (with include_closed, applied and rejected ones too)."""
        return _result(lambda: {"proposals": [p.as_dict() for p in api.list_proposals(vault, include_closed=include_closed)]})

    @server.resource("memrepo://context", name="context", mime_type="text/plain",
                     description="The session-start block: identity, principles, constraints and preferences.")
    def context_resource() -> str:
        try:
            return api.context(vault, agent=state.agent).text
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
