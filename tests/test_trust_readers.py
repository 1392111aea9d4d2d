"""Readers survive any file in main: a hand commit made with ``--no-verify`` (or pulled from a
teammate) can hold any bytes. Every read command (CLI, MCP tools, API) skips the bad file and
names it by path and field; none ends in a traceback, and the good memories stay readable."""
from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import MEMREPO, git, person_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memrepo import api
from memrepo.errors import MemrepoError
from memrepo.review import writes
from memrepo.store import document, schema

ORDER = schema.field_order()


def seeded(root: Path):
    """A vault with two good memories (one a standing preference) and the one a person breaks."""
    vault = api.init(root)
    writes.add(vault, {"id": "mem_good", "subject": "user", "fact": "ui.theme", "kind": "preference",
                       "summary": "dark theme for the editor"}, "The user prefers dark.")
    writes.add(vault, {"id": "mem_other", "subject": "ops", "kind": "decision", "summary": "deploys on tuesday"}, "")
    writes.add(vault, {"id": "mem_bad", "subject": "user", "fact": "ui.font", "kind": "preference",
                       "summary": "large font in the editor"}, "Editor font large.")
    path = vault.catalog().path_of("mem_bad")
    return vault, path


def commit_by_hand(root: Path, path: str, data: bytes) -> None:
    (root / path).write_bytes(data)
    git(root, "add", path)
    git(root, "commit", "-q", "--no-verify", "-m", "a hand edit")


def broken_with(meta: dict, body: str = "body\n") -> bytes:
    return document.render(meta, body, ORDER).encode("utf-8")


def base_meta(vault, path: str) -> dict:
    return dict(document.load_bytes((vault.root / path).read_bytes(), path).meta)


# ------------------------------------------------------------ the reported case: kind: [a]

def test_a_list_where_text_belongs_breaks_no_reader(tmp_path):
    vault, path = seeded(tmp_path / "v")
    meta = base_meta(vault, path)
    commit_by_hand(vault.root, path, broken_with({**meta, "kind": ["a"]}))
    vault.close()
    root = vault.root
    for args in (["list"], ["list", "--json"], ["context"], ["search", "editor"], ["recall", "editor font"]):
        proc = run_cli(root, *args)
        assert proc.returncode == 0, (args, proc.stderr)
        assert "Traceback" not in proc.stderr
        if args[0] in ("list", "context"):  # search and recall skip it without a word (per-turn cost)
            assert f"{path}:kind" in proc.stderr, (args, proc.stderr)
        assert "mem_bad" not in proc.stdout
    assert "mem_good" in run_cli(root, "list").stdout
    proc = run_cli(root, "show", "mem_bad")
    assert proc.returncode == 5 and f"{path}:kind" in proc.stderr and "Traceback" not in proc.stderr
    assert run_cli(root, "show", "mem_good").returncode == 0
    proc = run_cli(root, "validate")
    assert proc.returncode == 1 and f"{path}:kind" in proc.stdout + proc.stderr


def run_cli(root: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*MEMREPO, "--vault", str(root), *args], input=stdin, capture_output=True, text=True,
                          env=person_env(), errors="replace")


# ------------------------------------------------------------ any mutation of the front matter

_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30)
_leaf = st.one_of(_text, st.integers(-10**20, 10**20), st.floats(), st.booleans(), st.none(),
                  st.sampled_from(["", "active", "L9", "../x", "mem_good", "2026-13-45T99:00:00+00:00", "a\nb", "#x"]))
_value = st.recursive(_leaf, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                      st.dictionaries(_text, inner, max_size=3)), max_leaves=6)
_field = st.one_of(st.sampled_from(ORDER), st.sampled_from(["x-ext", "unknown", "", "id"]))
_mutation = st.one_of(
    st.tuples(st.just("set"), _field, _value),
    st.tuples(st.just("drop"), st.sampled_from(ORDER), st.none()),
    st.tuples(st.just("bytes"), st.sampled_from([
        b"", b"no front matter\n", b"---\nid: mem_bad\n", b"\xef\xbb\xbf---\nid: mem_bad\n---\n", b"---\n\xff\xfe: x\n---\n",
        b"---\n- a list\n---\n", b"---\nid: &a mem_bad\nsummary: *a\n---\n", b"---\nid: !!python/object:os.system x\n---\n",
        b"---\nid: mem_bad\nid: mem_bad\n---\n", b"---\n" + b"x: " + b"[" * 5000 + b"]" * 5000 + b"\n---\n",
    ]), st.none()),
)


def _mutated(meta: dict, mutation) -> bytes:
    kind, field, value = mutation
    if kind == "bytes":
        return value if value is not None else field
    meta = dict(meta)
    if kind == "drop":
        meta.pop(field, None)
    else:
        meta[field] = value
    try:
        return broken_with(meta)
    except (UnicodeEncodeError, ValueError):
        return b"---\nid: mem_bad\nsummary: [unwritable\n---\n"


READ_COMMANDS = (["list"], ["list", "--json"], ["show", "mem_bad"], ["show", "mem_good"], ["context"],
                 ["search", "editor font"], ["recall", "editor font"], ["validate"], ["why", "mem_good"],
                 ["log", "mem_good"], ["history", "user", "ui.theme"], ["proposals"], ["notices"],
                 ["export", "--to", "jsonl"], ["graph", "mem_good"])


def _cli_all(root: Path) -> list[tuple[list[str], subprocess.CompletedProcess]]:
    """Every read command as its own process, two at a time (the machine has two cores)."""
    out = []
    for i in range(0, len(READ_COMMANDS), 2):
        procs = [(args, subprocess.Popen([*MEMREPO, "--vault", str(root), *args], stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, env=person_env()))
                 for args in READ_COMMANDS[i:i + 2]]
        for args, p in procs:
            stdout, stderr = p.communicate()
            out.append((args, subprocess.CompletedProcess(args, p.returncode, stdout.decode("utf-8", "replace"),
                                                          stderr.decode("utf-8", "replace"))))
    return out


def _mcp_all(root: Path) -> list[tuple[str, object]]:
    from mcp.shared.memory import create_connected_server_and_client_session

    from memrepo.mcp.server import build_server
    server = build_server(str(root), "agent-7")
    calls = [("memory_get", {"id": "mem_bad"}), ("memory_get", {"id": "mem_good"}),
             ("memory_search", {"query": "editor font"}), ("memory_recall", {"text": "editor font"}),
             ("memory_history", {"subject": "user", "fact": "ui.font"}), ("memory_why", {"id": "mem_good"}),
             ("proposals_list", {})]

    async def main():
        async with create_connected_server_and_client_session(server) as client:
            found = [(name if name != "memory_get" else f"get:{args['id']}", await client.call_tool(name, args))
                     for name, args in calls]
            found.append(("context", await client.read_resource("memrepo://context")))
            return found
    try:
        return asyncio.run(main())
    finally:
        server._memrepo_state.close()


def _api_all(root: Path) -> list[tuple[str, object]]:
    out = []
    vault = api.Vault.find(explicit=root)
    calls = {"list": lambda: vault.list(), "get-bad": lambda: vault.get("mem_bad"), "get-good": lambda: vault.get("mem_good"),
             "search": lambda: api.search(vault, "editor font"), "recall": lambda: api.recall(vault, "editor font"),
             "context": lambda: api.context(vault), "validate": lambda: api.validate_tree(vault),
             "why": lambda: api.why(vault, "mem_good"), "history": lambda: api.fact_history(vault, "user", "ui.font"),
             "proposals": lambda: api.list_proposals(vault), "notices": lambda: api.notices(vault)}
    try:
        for name, call in calls.items():
            try:
                out.append((name, call()))
            except MemrepoError as e:
                out.append((name, e))
    finally:
        vault.close()
    return out


@pytest.mark.skipif(sys.platform == "win32", reason="git hooks and shells differ")
@settings(max_examples=14, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutation=_mutation)
def test_every_reader_survives_any_front_matter_committed_with_no_verify(mutation):
    import warnings

    from memrepo.errors import MemrepoWarning
    with tempfile.TemporaryDirectory() as tmp:
        vault, path = seeded(Path(tmp) / "v")
        data = _mutated(base_meta(vault, path), mutation)
        commit_by_hand(vault.root, path, data)
        vault.close()
        problems = [p for p in api.validate_tree(api.Vault.find(explicit=vault.root)) if p.path == path]
        bad = bool(problems)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always", MemrepoWarning)
            results = dict(_api_all(vault.root))
        assert all(not isinstance(r, MemrepoError) or path in str(r) or name in ("why", "history")
                   for name, r in results.items()), results
        assert not isinstance(results["get-good"], MemrepoError)
        if bad:
            assert isinstance(results["get-bad"], MemrepoError) and path in str(results["get-bad"])
            assert all(r["id"] != "mem_bad" for r in results["list"])
            assert any(path in str(w.message) for w in seen), [str(w.message) for w in seen]
        for name, result in _mcp_all(vault.root):
            if name == "context":
                assert "dark theme" in result.contents[0].text
                continue
            text = result.content[0].text
            assert "Traceback" not in text
            if result.isError:
                assert name == "get:mem_bad" and path in text, (name, text)
            if name == "get:mem_bad" and bad:
                assert result.isError
        for args, proc in _cli_all(vault.root):
            assert "Traceback" not in proc.stderr, (args, proc.stderr)
            assert proc.returncode in (0, 1, 3, 5), (args, proc.returncode, proc.stderr)
            if args[0] in ("search", "recall"):
                assert proc.returncode == 0 and not (bad and "mem_bad" in proc.stdout), (args, proc.stdout)
            if args[0] in ("list", "context") and bad:
                assert proc.returncode == 0 and path in proc.stderr, (args, proc.stderr)
            if args == ["show", "mem_bad"] and bad:
                assert proc.returncode in (3, 5) and path in proc.stderr, proc.stderr
            if args == ["show", "mem_good"]:
                assert proc.returncode == 0, proc.stderr
            if args == ["validate"]:
                assert proc.returncode == (1 if bad else 0), proc.stdout + proc.stderr
