"""What comes in from outside as data: a transcript, an import line, a hand-written file, a
query. Nothing of it may raise a traceback, hang a shared process, or be changed silently on
the way into a memory (nested ``x-`` values stay what they were)."""
from __future__ import annotations

import json
import time

import pytest
from conftest import cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memrepo.store import document, schema

ORDER = schema.field_order()

# ------------------------------------------------------------ nested x- values are data, not repr strings

NESTED = {"x-data": [{"a": 1}, {"b": [1, 2.5, None, True]}], "x-map": {"k": [{"deep": "深"}]}, "x-rows": [[1, 2], []]}


def test_nested_extension_values_round_trip_in_the_file_format():
    meta = {"id": "mem_a", **NESTED}
    text = document.render(meta, "body", ORDER)
    assert "{'a': 1}" not in text
    assert document.parse(text, "a.md").meta == meta
    assert document.render(document.parse(text, "a.md").meta, "body", ORDER) == text


def test_add_file_keeps_nested_extension_values(vault, tmp_path):
    hand = tmp_path / "note.md"
    hand.write_text("---\nid: mem_nested\nsummary: nested values\nx-data: [{a: 1}]\nx-map: {k: [1, {z: 2}]}\n---\nbody\n",
                    encoding="utf-8")
    proc = cli(vault.root, "add", "--file", str(hand), "--json")
    assert proc.returncode == 0, proc.stderr
    memory = vault.get("mem_nested")
    assert memory.meta["x-data"] == [{"a": 1}] and memory.meta["x-map"] == {"k": [1, {"z": 2}]}


def test_import_keeps_nested_extension_values(vault, tmp_path):
    lines = tmp_path / "in.jsonl"
    lines.write_text(json.dumps({"id": "mem_imp", "summary": "s", **NESTED}) + "\n", encoding="utf-8")
    proc = cli(vault.root, "import", str(lines))
    assert proc.returncode == 0, proc.stderr
    meta = vault.get("mem_imp").meta
    assert {k: meta[k] for k in NESTED} == NESTED


_leaf = st.one_of(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12), st.integers(-10**6, 10**6),
                  st.floats(allow_nan=False, allow_infinity=False), st.booleans(), st.none())
_nested = st.recursive(_leaf, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=6), inner, max_size=3)),
                       max_leaves=8)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=_nested)
def test_any_nested_extension_value_reads_back_equal_and_byte_stable(value):
    meta = {"id": "mem_a", "x-v": value, "x-list": [value]}
    text = document.render(meta, "", ORDER)
    parsed = document.parse(text, "a.md")
    assert parsed.meta == meta
    assert document.render(parsed.meta, "", ORDER) == text


# ------------------------------------------------------------ no traceback on hostile input

@pytest.mark.parametrize("line,field", [
    ('{"summary": "x", "x-n": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested"),
    ('{"summary": "x", "x-n": ' + "9" * 5001 + "}", "digits"),
    ('{"summary": "x", "x-n": 1e999999}', "infinite"),
])
def test_an_import_line_that_json_cannot_hold_is_a_bad_line(vault, tmp_path, line, field):
    path = tmp_path / "in.jsonl"
    path.write_text('{"summary": "fine"}\n' + line + "\n", encoding="utf-8")
    head = vault.head()
    proc = cli(vault.root, "import", str(path))
    assert proc.returncode == 5, proc.stderr
    assert "Traceback" not in proc.stderr and f"{path}:line 2" in proc.stderr
    assert vault.head() == head
    proc = cli(vault.root, "import", str(path), "--skip-invalid", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["imported"] == 1


@pytest.mark.parametrize("data", [
    b'[{"role": "user", "content": "hi"}, {"role": "tool", "content": "\xff\xfe"}]',
    b"[" * 100_000 + b"]" * 100_000,
    b'{"messages": [{"role": "tool", "content": ' + b"1" * 5000 + b"}]}",
])
def test_prune_of_a_transcript_that_is_not_json_text_is_a_clear_error(vault, tmp_path, data):
    path = tmp_path / "t.json"
    path.write_bytes(data)
    for args, stdin in (([str(path)], None), (["-"], data)):
        proc = cli(vault.root, "prune", *args, stdin=stdin)
        assert proc.returncode in (2, 5), proc.stderr
        assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


def test_recall_and_flush_of_hostile_json_are_clear_errors_or_plain_text(vault):
    deep = "[" * 100_000 + "]" * 100_000
    for args in (["recall"], ["flush", "--cycle", "1"], ["recall", "--hook"]):
        proc = cli(vault.root, *args, stdin=deep)
        assert "Traceback" not in proc.stderr, (args, proc.stderr)
        assert proc.returncode in (0, 1, 2, 5), (args, proc.returncode)


def test_an_advanced_search_with_a_huge_word_is_refused_at_once(vault):
    """Whoosh's query parser is quadratic in a word's length (30,000 characters took 10 s and
    held a shared server meanwhile): the advanced syntax takes words up to a bound."""
    started = time.perf_counter()
    proc = cli(vault.root, "search", "--advanced", "a" * 100_000)
    assert time.perf_counter() - started < 10
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "--advanced" in proc.stderr
    proc = cli(vault.root, "search", "--advanced", " ".join(["word"] * 20_000))
    assert proc.returncode in (0, 2) and "Traceback" not in proc.stderr


# ------------------------------------------------------------ credentials in tool results never reach git

def env_dump_session() -> tuple[list[dict], dict[str, str]]:
    from secret_corpus import r
    secrets = {"aws": "AKIA" + r(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"), "github": "ghp_" + r(36),
               "pg": r(14)}
    dump = ("HOME=/home/ops\nPATH=/usr/bin\n" + f"AWS_ACCESS_KEY_ID={secrets['aws']}\n"
            f"GITHUB_TOKEN={secrets['github']}\nDATABASE_URL=postgres://app:{secrets['pg']}@db.internal:5432/app\n"
            + "".join(f"VAR_{i}=value {i}\n" for i in range(400)))
    msgs = [{"role": "user", "content": "why does the deploy fail?"},
            {"role": "assistant", "content": "checking the environment", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": '{"cmd": "env"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": dump}]
    msgs += [{"role": "assistant", "content": f"step {i}"} for i in range(4)]
    return msgs, secrets


def test_prune_never_commits_credentials_as_evidence(vault, tmp_path):
    msgs, secrets = env_dump_session()
    path = tmp_path / "t.json"
    path.write_text(json.dumps(msgs))
    proc = cli(vault.root, "prune", str(path), "--soft-chars", "500", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["evidence_commit"]
    from conftest import git
    history = git(vault.root, "log", "-p", "--all")
    for value in secrets.values():
        assert value not in history, value
    [redacted] = report["redacted"]
    assert {"aws-access-key-id", "github-token", "url-credentials"} <= set(redacted["rules"])
    stored = cli(vault.root, "evidence", redacted["evidence"]).stdout
    assert "[REDACTED:github-token]" in stored and "VAR_399=value 399" in stored


def test_prune_can_refuse_instead_of_redacting(vault, tmp_path):
    config = vault.root / ".memrepo" / "config.toml"
    config.write_text(config.read_text() + '\n[evidence]\nsecrets = "refuse"\n')
    from conftest import git
    git(vault.root, "commit", "-qam", "refuse credentials in evidence")
    msgs, secrets = env_dump_session()
    path = tmp_path / "t.json"
    path.write_text(json.dumps(msgs))
    head = vault.head()
    proc = cli(vault.root, "prune", str(path), "--soft-chars", "500")
    assert proc.returncode == 5 and "transcript message 2" in proc.stderr and "github-token" in proc.stderr
    assert "Traceback" not in proc.stderr and secrets["github"] not in proc.stderr + proc.stdout
    assert vault.head() == head and not (vault.root / "evidence").exists()


def test_prune_never_commits_a_disguised_credential(vault, tmp_path):
    """A tool result that is JSON with escaped slashes, or a Kubernetes secret (base64), is
    evidence too: the credential inside is redacted before anything is committed."""
    import base64

    from secret_corpus import r
    password, token = r(14), "ghp_" + r(36)
    secret = base64.b64encode(f"postgres://app:{password}@db:5432/app".encode()).decode()
    result = ('{"kind":"Secret","data":{"DATABASE_URL":"' + secret + '"},"env":"GITHUB_TOKEN\\u003d' + token
              + '","dsn":"postgres:\\/\\/app:' + password + '@db.internal\\/app"}' + " padding" * 200)
    msgs = [{"role": "user", "content": "why does the deploy fail?"},
            {"role": "assistant", "content": "reading the secret", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": '{"cmd": "kubectl"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": result}]
    msgs += [{"role": "assistant", "content": f"step {i}"} for i in range(4)]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(msgs))
    proc = cli(vault.root, "prune", str(path), "--soft-chars", "500", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["redacted"]
    from conftest import git
    history = git(vault.root, "log", "-p", "--all")
    for value in (password, token, secret):
        assert value not in history, value
