"""A warm ``memrepo mcp`` server never answers from stale state: whatever another process does
to the vault (the CLI, a hand edit committed with git, a revert, a checkout, a merge, packed
refs, an uncommitted edit) is seen on the server's next call. Driven by the mcp SDK's client
against ``memrepo mcp`` as a real subprocess."""
from __future__ import annotations

import asyncio
import json
import os
import sys

import pytest
from conftest import cli, git

pytest.importorskip("mcp", reason="the mcp SDK is a pinned dependency: run 'make install-test' (pip install -e '.[test]')")

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from memrepo import api  # noqa: E402


def _data(result) -> dict:
    assert not result.isError, result.content[0].text
    return json.loads(result.content[0].text)


def _serve(vault, scenario):
    env = {k: v for k, v in os.environ.items() if k != "MEMREPO_VAULT"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "memrepo", "mcp", "--vault", str(vault.root)],
                                   env=env)

    async def main():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as client:
                await client.initialize()

                async def ids(query: str) -> list[str]:
                    found = _data(await client.call_tool("memory_search", {"query": query}))
                    return [h["id"] for h in found["hits"]]

                async def recalled(text: str) -> list[str]:
                    found = _data(await client.call_tool("memory_recall", {"text": text}))
                    return [m["id"] for m in found["memories"]]

                async def get(memory_id: str) -> dict:
                    return _data(await client.call_tool("memory_get", {"id": memory_id}))
                return await scenario(ids, recalled, get)
    return asyncio.run(asyncio.wait_for(main(), 120))


def _edit(vault, memory_id: str, old: str, new: str) -> None:
    path = vault.root / vault.get(memory_id).path
    path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")  # in place


def test_commits_by_other_processes_are_seen_on_the_next_call(vault):
    api.add(vault, {"id": "mem_pool", "subject": "db", "summary": "Connection pool limit is 50"})

    async def scenario(ids, recalled, get):
        assert await ids("pool limit") == ["mem_pool"]  # the server is warm from here on
        assert await ids("pgbouncer") == []
        # the CLI, another process
        assert cli(vault.root, "add", "--subject", "db", "--summary", "Use pgbouncer in front of postgres").returncode == 0
        found = await ids("pgbouncer")
        assert len(found) == 1
        # a hand edit committed with git
        _edit(vault, "mem_pool", "limit is 50", "ceiling is eighty")
        git(vault.root, "commit", "-qam", "hand edit: raise the pool ceiling")
        assert await ids("ceiling eighty") == ["mem_pool"]
        assert await ids("limit 50") == []
        assert "ceiling is eighty" in (await get("mem_pool"))["summary"]
        # a revert of it
        git(vault.root, "revert", "--no-edit", "HEAD")
        assert await ids("ceiling eighty") == []
        assert await recalled("what is the connection pool limit?") == ["mem_pool"]
        assert (await get("mem_pool"))["summary"] == "Connection pool limit is 50"
        # packed refs, then a commit that writes a loose ref again
        git(vault.root, "pack-refs", "--all")
        _edit(vault, "mem_pool", "limit is 50", "limit is 60")
        git(vault.root, "commit", "-qam", "hand edit after pack-refs")
        assert (await get("mem_pool"))["summary"] == "Connection pool limit is 60"
        assert await ids("limit 60") == ["mem_pool"]
        return found
    _serve(vault, scenario)


def test_checkout_merge_and_uncommitted_edits_are_seen_on_the_next_call(vault):
    api.add(vault, {"id": "mem_cache", "subject": "cache", "summary": "Redis timeout is 5 seconds"})

    async def scenario(ids, recalled, get):
        assert await ids("redis timeout") == ["mem_cache"]
        # a side branch with a memory written by hand, checked out and back
        git(vault.root, "checkout", "-qb", "side")
        folder = vault.root / "memories" / "L1" / "2026-11-30"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "mem_side.md").write_text(
            "---\nid: mem_side\nlayer: L1\nkind: knowledge\nsubject: ops\nsummary: Vacuum the orders table weekly\n"
            "status: active\nsource: user\ncreated: \"2026-11-30T09:00:00+00:00\"\n---\nBy hand.\n", encoding="utf-8")
        git(vault.root, "add", "-A")
        git(vault.root, "commit", "-qm", "side: vacuum")
        assert await ids("vacuum orders") == ["mem_side"]
        git(vault.root, "checkout", "-q", "main")
        assert await ids("vacuum orders") == []
        git(vault.root, "merge", "-q", "--ff-only", "side")
        assert await ids("vacuum orders") == ["mem_side"]
        # an uncommitted edit written in place, and its undoing
        _edit(vault, "mem_cache", "5 seconds", "nine ticks sharp")
        assert await ids("ticks sharp") == ["mem_cache"]
        git(vault.root, "checkout", "--", vault.get("mem_cache").path)
        assert await ids("ticks sharp") == []
        assert await recalled("what is the redis timeout?") == ["mem_cache"]
    _serve(vault, scenario)
