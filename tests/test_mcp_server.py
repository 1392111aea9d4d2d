"""The MCP server, driven by the mcp SDK's own client: in-process and over stdio against a real
``memrepo mcp`` subprocess."""
from __future__ import annotations

import asyncio
import json
import os
import sys

import pytest
from conftest import git

pytest.importorskip("mcp", reason="the mcp SDK is a pinned dependency: run 'make install-test' (pip install -e '.[test]')")

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from mcp.shared.memory import create_connected_server_and_client_session  # noqa: E402

from memrepo import api  # noqa: E402
from memrepo.mcp.server import build_server  # noqa: E402

TOOLS = {"memory_recall", "memory_search", "memory_get", "memory_write", "memory_flush", "memory_history",
         "memory_why", "proposals_list", "memory"}


def data(result) -> dict:
    assert not result.isError, result.content[0].text
    return json.loads(result.content[0].text)


def in_process(vault, scenario, agent="agent-7"):
    server = build_server(str(vault.root), agent)

    async def main():
        async with create_connected_server_and_client_session(server) as client:
            return await scenario(client)
    try:
        return asyncio.run(main())
    finally:
        server._memrepo_state.close()


def test_tools_and_the_context_resource_are_listed_with_guidance(vault):
    async def scenario(client: ClientSession):
        tools = (await client.list_tools()).tools
        resources = (await client.list_resources()).resources
        return tools, resources
    tools, resources = in_process(vault, scenario)
    assert {t.name for t in tools} == TOOLS
    write = next(t for t in tools if t.name == "memory_write")
    assert "short, hard, reusable" in write.description and "pending_review" in write.description
    assert "cite" in next(t for t in tools if t.name == "memory_recall").description
    assert [str(r.uri) for r in resources] == ["memrepo://context"]


def test_write_recall_get_why_and_context_in_process(vault):
    async def scenario(client: ClientSession):
        w = data(await client.call_tool("memory_write", {
            "summary": "Do not restart the payment service during incidents", "subject": "ops", "kind": "decision",
            "body": "A restart drops in-flight transactions.", "evidence": ["logs/api.log#L10-L40"], "source": "user"}))
        pref = data(await client.call_tool("memory_write", {"summary": "Answers as short bullet lists",
                                                            "subject": "user", "kind": "preference", "source": "user"}))
        r = data(await client.call_tool("memory_recall", {"text": "why not restart the service?", "session": "s1"}))
        g = data(await client.call_tool("memory_get", {"id": w["id"]}))
        why = data(await client.call_tool("memory_why", {"id": w["id"]}))
        s = data(await client.call_tool("memory_search", {"query": "restart payment"}))
        ctx = await client.read_resource("memrepo://context")
        return w, pref, r, g, why, s, ctx
    w, pref, r, g, why, s, ctx = in_process(vault, scenario)
    assert w["status"] == "active" and w["commit"]
    assert r["memories"][0]["id"] == w["id"] and f"[{w['id']}]" in r["block"] and r["chars"] <= 4000
    assert g["author"] == "agent-7" and g["body"].startswith("A restart drops")
    assert why["id"] == w["id"] and why["written_by"] == "agent-7" and why["evidence"] == ["logs/api.log#L10-L40"]
    assert s["hits"][0]["id"] == w["id"]
    assert "Answers as short bullet lists" in ctx.contents[0].text


def test_an_agent_can_never_make_a_high_risk_memory_active(vault):
    async def scenario(client: ClientSession):
        c = data(await client.call_tool("memory_write", {"summary": "Never auto publish", "kind": "constraint",
                                                         "subject": "release", "fact": "release.auto_publish"}))
        l3 = data(await client.call_tool("memory_write", {"summary": "Prefer small releases", "layer": "L3"}))
        inferred = data(await client.call_tool("memory_write", {"summary": "User seems to like dark mode",
                                                                "source": "model-inference"}))
        props = data(await client.call_tool("proposals_list", {}))
        return c, l3, inferred, props
    c, l3, inferred, props = in_process(vault, scenario)
    for w in (c, l3, inferred):
        assert w["status"] == "pending_review" and w["proposal"]
    assert "long-term layer L3" in l3["risk_reason"]
    assert {p["id"] for p in props["proposals"]} == {c["proposal"], l3["proposal"], inferred["proposal"]}
    assert vault.list(status="active") == []


def test_memory_write_with_scope_shared_proposes_to_the_pool(vault):
    fact = {"scope": "shared", "subject": "user", "fact": "ui.theme", "source": "user"}

    async def first(client: ClientSession):
        return data(await client.call_tool("memory_write", {**fact, "summary": "dark"}))

    async def second(client: ClientSession):
        same = data(await client.call_tool("memory_write", {**fact, "summary": "dark"}))
        other = data(await client.call_tool("memory_write", {**fact, "summary": "light"}))
        missing = await client.call_tool("memory_write", {"scope": "shared", "summary": "no key"})
        return same, other, missing

    written = in_process(vault, first, agent="analyst")
    same, other, missing = in_process(vault, second, agent="executor")
    assert written["outcome"] == "written"
    assert same["outcome"] == "reinforced" and same["reinforced"] == written["id"]
    assert other["outcome"] == "proposed" and other["proposal"]  # default policy: a person decides
    assert missing.isError and "fact" in missing.content[0].text
    active = vault.list(status="active")
    assert [r["id"] for r in active] == [written["id"]]


def test_errors_are_tool_errors_with_the_cli_message(vault):
    async def scenario(client: ClientSession):
        missing = await client.call_tool("memory_get", {"id": "mem_nope"})
        bad = await client.call_tool("memory_write", {"summary": "x", "kind": "nonsense"})
        return missing, bad
    missing, bad = in_process(vault, scenario)
    assert missing.isError and missing.content[0].text.startswith("no memory 'mem_nope'")
    assert bad.isError and "kind" in bad.content[0].text and "Traceback" not in bad.content[0].text


def test_flush_and_history_through_the_server(vault):
    async def scenario(client: ClientSession):
        f1 = data(await client.call_tool("memory_flush", {"cycle": "1", "session": "s", "text": json.dumps(
            {"decision": "Keep the pool at 50", "subject": "db", "fact": "pool.size"})}))
        f2 = data(await client.call_tool("memory_flush", {"cycle": "1", "session": "s", "text": "## What\nagain\n"}))
        h = data(await client.call_tool("memory_history", {"subject": "db", "fact": "pool.size"}))
        return f1, f2, h
    f1, f2, h = in_process(vault, scenario)
    assert f1["written"] == 1 and f2["written"] == 0 and f2["reason"] == "cycle already flushed"
    assert [v["id"] for v in h["versions"]] == f1["active"]
    assert vault.get(f1["active"][0]).meta["author"] == "agent-7"


def test_the_server_sees_commits_made_by_other_processes(vault):
    async def scenario(client: ClientSession):
        first = data(await client.call_tool("memory_search", {"query": "pgbouncer"}))
        api.add(api.Vault(vault.root), {"subject": "db", "summary": "Use pgbouncer in front of postgres"})  # another writer
        (vault.root / "memories" / "L1" / "2026-11-30").mkdir(parents=True)
        hand = vault.root / "memories" / "L1" / "2026-11-30" / "mem_20261130_hand01.md"
        hand.write_text("---\nid: mem_20261130_hand01\nlayer: L1\nkind: knowledge\nsubject: db\n"
                        "summary: Vacuum the orders table weekly\nstatus: active\nsource: user\n"
                        "created: \"2026-11-30T09:00:00+00:00\"\n---\nBy hand.\n", encoding="utf-8")
        git(vault.root, "add", str(hand))
        git(vault.root, "commit", "-qm", "hand edit")
        second = data(await client.call_tool("memory_search", {"query": "pgbouncer"}))
        third = data(await client.call_tool("memory_recall", {"text": "how often do we vacuum the orders table?"}))
        got = data(await client.call_tool("memory_get", {"id": "mem_20261130_hand01"}))
        return first, second, third, got
    first, second, third, got = in_process(vault, scenario)
    assert first["nothing_relevant"] and second["hits"][0]["summary"] == "Use pgbouncer in front of postgres"
    assert third["memories"][0]["id"] == "mem_20261130_hand01" and got["body"] == "By hand.\n"


def test_stdio_against_a_real_memrepo_mcp_subprocess(vault):
    api.add(vault, {"subject": "ops", "kind": "decision", "summary": "Do not restart the payment service"},
            "A restart drops in-flight transactions.")
    env = {k: v for k, v in os.environ.items() if k != "MEMREPO_VAULT"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "memrepo", "mcp", "--vault", str(vault.root),
                                                                 "--agent", "stdio-agent"], env=env)

    async def main():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as client:
                await client.initialize()
                tools = {t.name for t in (await client.list_tools()).tools}
                r = data(await client.call_tool("memory_recall", {"text": "should we restart the payment service?"}))
                w = data(await client.call_tool("memory_write", {"summary": "Payments p95 target is 200 ms",
                                                                 "subject": "ops", "kind": "knowledge", "source": "tool"}))
                err = await client.call_tool("memory_why", {"id": "mem_missing"})
                return tools, r, w, err
    tools, r, w, err = asyncio.run(asyncio.wait_for(main(), 60))
    assert tools == TOOLS
    assert r["memories"][0]["summary"] == "Do not restart the payment service"
    assert w["status"] == "active" and vault.get(w["id"]).meta["author"] == "stdio-agent"
    assert err.isError and "mem_missing" in err.content[0].text and "Traceback" not in err.content[0].text


def test_the_tools_read_the_agents_private_vault(vault):
    """memory_recall, memory_search, memory_get and the context resource read the acting
    agent's private vault with the shared pool; another agent's server does not see it."""
    from memrepo.team import scopes
    memory = scopes.add(vault, {"scope": "private", "kind": "preference", "subject": "user",
                                "summary": "The user wants dark mode dashboards"}, "dark mode for every dashboard",
                        agent="analyst")

    async def scenario(client: ClientSession):
        recalled = data(await client.call_tool("memory_recall", {"text": "dark mode dashboards"}))
        found = data(await client.call_tool("memory_search", {"query": "dark mode dashboards"}))
        got = await client.call_tool("memory_get", {"id": memory.id})
        context = (await client.read_resource("memrepo://context")).contents[0].text
        return recalled, found, got, context
    for agent, sees in (("analyst", True), ("executor", False)):
        recalled, found, got, context = in_process(vault, scenario, agent=agent)
        assert ("dark mode" in recalled["block"]) is sees
        assert bool(found["hits"]) is sees
        assert got.isError is not sees
        assert ("dark mode" in context) is sees


def test_building_the_server_prints_no_library_warning(vault):
    # an agent runtime shows the server's stderr: a warning from the SDK's settings on every
    # start reads like a fault
    import subprocess
    proc = subprocess.run([sys.executable, "-W", "default", "-c",
                           f"from memrepo.mcp.server import build_server; build_server({str(vault.root)!r})"],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "Warning" not in proc.stderr, proc.stderr


def test_every_parameter_is_described_with_its_enums_and_bounds(vault):
    async def scenario(client: ClientSession):
        return {t.name: t.inputSchema for t in (await client.list_tools()).tools}
    schemas = in_process(vault, scenario)

    def prop(tool: str, name: str) -> dict:
        p = schemas[tool]["properties"][name]
        return {**p, **next((a for a in p.get("anyOf", ()) if a.get("type") != "null"), {})}

    undescribed = [f"{tool}.{name}" for tool, s in schemas.items() for name, p in s["properties"].items()
                   if not p.get("description")]
    assert undescribed == []
    for tool in ("memory_write", "memory_search"):
        assert prop(tool, "kind")["enum"][:3] == ["event", "checkpoint", "decision"]
        assert prop(tool, "layer")["enum"] == ["L1", "L2", "L3", "L4"]
    assert prop("memory_write", "source")["enum"] == ["user", "model-inference", "tool"]
    assert (prop("memory_recall", "budget")["minimum"], prop("memory_search", "limit")["minimum"]) == (1, 1)
    assert "maximum" in prop("memory_recall", "budget") and "maximum" in prop("memory_search", "limit")
    assert (prop("memory_write", "confidence")["minimum"], prop("memory_write", "confidence")["maximum"]) == (0, 1)
    assert prop("memory_write", "summary")["maxLength"] == 500 and schemas["memory_write"]["required"] == ["summary"]


def test_a_bad_argument_is_one_clear_line(vault):
    async def scenario(client: ClientSession):
        return [await client.call_tool(tool, args) for tool, args in (
            ("memory_write", {"summary": "x", "layer": "L9"}),
            ("memory_write", {"summary": "x" * 501}),
            ("memory_write", {"summary": "x", "confidence": 2}),
            ("memory_write", {}),
            ("memory_recall", {"text": "tea", "budget": 0}),
            ("memory_search", {"query": "tea", "limit": "many"}),
            ("memory_write", {"summary": "nul\x00inside"}),
            ("memory_search", {"query": "tea\x00"}),
            ("memory_write", {"summary": "fine", "tags": ["ok", "nul\x00"]}))]
    results = in_process(vault, scenario)
    texts = [r.content[0].text for r in results]
    assert all(r.isError for r in results), texts
    for text in texts:
        assert "\n" not in text and "pydantic" not in text and "validation error" not in text.lower(), text
        assert "embedded null byte" not in text and "Traceback" not in text, text
    assert texts[0].startswith("memory_write: layer: ") and "'L1', 'L2', 'L3' or 'L4'" in texts[0]
    assert texts[1].startswith("memory_write: summary: ") and "500" in texts[1]
    assert texts[2].startswith("memory_write: confidence: ") and texts[3] == "memory_write: summary: is required"
    assert texts[4].startswith("memory_recall: budget: ") and texts[5].startswith("memory_search: limit: ")
    assert all("NUL byte" in t for t in texts[6:]), texts[6:]
    assert vault.list() == []


def test_the_server_says_it_is_memrepo_of_this_version(vault):
    import memrepo
    env = {k: v for k, v in os.environ.items() if k != "MEMREPO_VAULT"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "memrepo", "mcp", "--vault", str(vault.root)], env=env)

    async def main():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as client:
                return (await client.initialize()).serverInfo
    info = asyncio.run(asyncio.wait_for(main(), 60))
    assert (info.name, info.version) == ("memrepo", memrepo.__version__)
