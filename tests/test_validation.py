"""Every bad input a person or a tool can give: a clear error naming file, field or line and the fix; nothing changed.

Each bad file goes through the public checks (``validate_paths``, ``validate_tree``, the CLI's
``validate``) and through the pre-commit hook a person triggers with plain ``git commit``. Bad
fields also go through the write path (``memories.add`` and ``import_jsonl``). After every
refusal ``main`` and ``git status`` are exactly what they were before.
"""
from __future__ import annotations

import json
import os
import subprocess
import time

import pytest
from conftest import git
from typer.testing import CliRunner

from memrepo.cli.app import app
from memrepo.errors import InvalidMemory, UsageError
from memrepo.review import validate
from memrepo.review import writes as memories

REL = "memories/L2/mem_bad.md"
VALID = """\
---
id: mem_bad
layer: L2
kind: pattern
subject: proj
summary: a summary
status: active
source: user
created: "2026-11-29T09:30:00+00:00"
---
body text
"""

# Credentials are assembled at run time so this file itself never looks like it holds one.
AWS_KEY = "AKIA" + "Q3EXAMPLE7ZZ4KPB"
GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2
OPENAI_KEY = "sk-" + "proj-" + "Zx9" * 12
SLACK_TOKEN = "xox" + "b-2048-1234567890-AbCdEfGhIjKl"
PRIVATE_KEY = "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIEow...\n-----END RSA PRIVATE KEY-----"

BOMB = """x-a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
x-b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
x-c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
x-d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
x-e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
x-f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
x-g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
x-h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
x-i: [*h,*h,*h,*h,*h,*h,*h,*h,*h]"""


def sub(old: str, new: str) -> bytes:
    assert old in VALID
    return VALID.replace(old, new, 1).encode()


# (case id, path in the vault, bytes (None: a symlink), field the problem must name, words of the fix)
FILE_CASES = [
    ("malformed-yaml", REL, sub("summary: a summary", "summary: [unclosed"), "line ", "fix the front matter"),
    ("not-a-mapping", REL, b"---\n- a\n- b\n---\nbody\n", "(front matter)", "mapping of 'key: value' lines"),
    ("python-tag", REL, sub("summary: a summary", "summary: !!python/object/apply:os.system ['id']"),
     "line 6", "tags (!!type) are not allowed"),
    ("alias-bomb", REL, sub("summary: a summary", BOMB + "\nsummary: a"), "line 6", "aliases"),
    ("duplicate-key", REL, sub("summary: a summary", "summary: one\nsummary: two"), "line 7", "keep one"),
    ("wrong-type-number", REL, sub("summary: a summary", "summary: s\nweight: heavy"), "weight", "must be a number"),
    ("wrong-type-list", REL, sub("summary: a summary", "summary: s\ntags: notalist"), "tags", "must be a list"),
    ("wrong-type-text", REL, sub("summary: a summary", "summary: 12"), "summary", "must be text"),
    ("unknown-layer", REL, sub("layer: L2", "layer: L9"), "layer", "not one of L1, L2, L3, L4"),
    ("unknown-status", REL, sub("status: active", "status: done"), "status", "not one of active"),
    ("unknown-kind", REL, sub("kind: pattern", "kind: gossip"), "kind", "not one of"),
    ("unknown-key", REL, sub("summary: a summary", "summary: s\ncolour: red"), "colour", "prefix your own keys with 'x-'"),
    ("missing-field", REL, sub("subject: proj\n", ""), "subject", "is required"),
    ("bad-date", REL, sub('created: "2026-11-29T09:30:00+00:00"', "created: 2026-11-29"), "created", "ISO-8601"),
    ("id-with-slash", REL, sub("id: mem_bad", "id: mem/bad"), "id", "not allowed"),
    ("id-with-dotdot", "memories/L2/mem..bad.md", sub("id: mem_bad", "id: mem..bad"), "id", ".."),
    ("id-unsafe-chars", "memories/L2/mem bad!.md", sub("id: mem_bad", "id: mem bad!"), "id", "not allowed"),
    ("id-not-file-name", REL, sub("id: mem_bad", "id: mem_other"), "id", "rename the file or fix the id"),
    ("non-utf8", REL, VALID.encode().replace(b"body text", b"b\xff\xfedy"), "line 11", "re-save the file as UTF-8"),
    ("over-size-cap", REL, VALID.encode() + b"x" * (300 * 1024), "(file)", "byte cap"),
    ("symlink", REL, None, "(file)", "symlink"),
    ("aws-key", REL, sub("body text", f"deploy key {AWS_KEY}"), "body (line 11)", "aws-access-key-id"),
    ("github-token", REL, sub("body text", f"token {GITHUB_TOKEN}"), "body (line 11)", "github-token"),
    ("openai-key", REL, sub("body text", f"OPENAI {OPENAI_KEY}"), "body (line 11)", "openai-api-key"),
    ("slack-token", REL, sub("body text", f"bot {SLACK_TOKEN}"), "body (line 11)", "slack-token"),
    ("private-key", REL, sub("body text", PRIVATE_KEY), "body (line 11)", "private-key-block"),
    ("password-assignment", REL, sub("body text", "db password=hunter2hunter2"), "body (line 11)", "password-assignment"),
    ("secret-in-summary", REL, sub("summary: a summary", f"summary: key {AWS_KEY}"), "summary (line 6)", "aws-access-key-id"),
    ("evidence-parent", REL, sub("summary: a summary", "summary: s\nevidence:\n  - ../../etc/passwd#L1"), "evidence", "points outside the vault"),
    ("evidence-absolute", REL, sub("summary: a summary", "summary: s\nevidence:\n  - /etc/shadow"), "evidence", "points outside the vault"),
    ("evidence-home", REL, sub("summary: a summary", "summary: s\nevidence:\n  - ~/notes.md"), "evidence", "points outside the vault"),
]


def test_non_utf8_case_really_holds_invalid_bytes():
    data = dict((c[0], c[2]) for c in FILE_CASES)["non-utf8"]
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")


def place(vault, rel: str, data: bytes | None, tmp_path) -> None:
    target = vault.root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    if data is None:
        outside = tmp_path / "outside.md"
        outside.write_bytes(VALID.encode())
        os.symlink(outside, target)
    else:
        target.write_bytes(data)


def snapshot(vault) -> tuple[str, str]:
    return git(vault.root, "rev-parse", "main"), git(vault.root, "status", "--porcelain")


def assert_named(problems, rel: str, field: str, hint: str) -> None:
    texts = [str(p) for p in problems]
    assert any(p.path == rel and field in p.field and hint in p.message for p in problems), texts


@pytest.mark.parametrize("case, rel, data, field, hint", FILE_CASES, ids=[c[0] for c in FILE_CASES])
def test_validate_names_file_field_and_fix(vault, tmp_path, case, rel, data, field, hint):
    place(vault, rel, data, tmp_path)
    before = snapshot(vault)
    started = time.monotonic()
    assert_named(validate.validate_paths(vault, [vault.root / rel]), rel, field, hint)
    assert_named(validate.validate_tree(vault), rel, field, hint)
    assert time.monotonic() - started < 5  # an alias bomb must not explode
    result = CliRunner().invoke(app, ["--vault", str(vault.root), "validate", "--json", str(vault.root / rel)])
    assert result.exit_code == 1, result.output
    found = json.loads(result.stdout)
    assert found["ok"] is False and any(p["path"] == rel and field in p["field"] for p in found["problems"])
    assert snapshot(vault) == before


@pytest.mark.parametrize("case, rel, data, field, hint", FILE_CASES, ids=[c[0] for c in FILE_CASES])
def test_pre_commit_hook_refuses_with_path_field_message(vault, tmp_path, case, rel, data, field, hint):
    place(vault, rel, data, tmp_path)
    git(vault.root, "add", "--", rel)
    before = snapshot(vault)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k.startswith("GIT_CONFIG")}
    proc = subprocess.run(["git", "-C", str(vault.root), "commit", "-q", "-m", f"hand edit {case}"],
                          capture_output=True, text=True, env=env)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert f"{rel}:{field}" in proc.stderr and hint in proc.stderr, proc.stderr
    assert snapshot(vault) == before


# ----------------------------------------------------------------- write path

def fields(**extra):
    base = {"subject": "proj", "kind": "knowledge", "layer": "L2", "summary": "a fact"}
    base.update(extra)
    return base


WRITE_CASES = [
    ("wrong-type", fields(weight="heavy"), "b", "weight", "must be a number"),
    ("out-of-range", fields(confidence=3), "b", "confidence", "maximum"),
    ("unknown-layer", fields(layer="L7"), "b", "layer", "not one of"),
    ("unknown-kind", fields(kind="gossip"), "b", "kind", "not one of"),
    ("unknown-source", fields(source="rumour"), "b", "source", "not one of"),
    ("bad-scope", fields(scope="everyone"), "b", "scope", "not allowed"),
    ("unknown-key", fields(colour="red"), "b", "colour", "x-"),
    ("id-slash", fields(id="a/b"), "b", "id", "not allowed"),
    ("id-dotdot", fields(id="..x"), "b", "id", ""),
    ("id-escape", fields(id="../../../etc/x"), "b", "id", ""),
    ("id-space", fields(id="has space"), "b", "id", "not allowed"),
    ("link-bad-id", fields(links=["../up"]), "b", "links", ""),
    ("aws-in-body", fields(), f"use {AWS_KEY}", "body", "aws-access-key-id"),
    ("github-in-summary", fields(summary=f"token {GITHUB_TOKEN}"), "b", "summary", "github-token"),
    ("openai-in-tag", fields(tags=[OPENAI_KEY]), "b", "line", "openai-api-key"),
    ("slack-in-body", fields(), SLACK_TOKEN, "body", "slack-token"),
    ("private-key-in-body", fields(), PRIVATE_KEY, "body", "private-key-block"),
    ("password-in-body", fields(), "password: s3cr3t-value", "body", "password-assignment"),
    ("chinese-password", fields(), "数据库密码=abc123456", "body", "password-assignment"),
    ("evidence-escape", fields(evidence=["../../secrets.txt#L1"]), "b", "evidence", "outside the vault"),
    ("evidence-absolute", fields(evidence=["/etc/passwd"]), "b", "evidence", "outside the vault"),
    ("multi-line-summary", fields(summary="one\ntwo"), "b", "summary", "not allowed"),
]


@pytest.mark.parametrize("case, given, body, field, hint", WRITE_CASES, ids=[c[0] for c in WRITE_CASES])
def test_add_refuses_and_writes_nothing(vault, case, given, body, field, hint):
    before = snapshot(vault)
    branches = git(vault.root, "for-each-ref")
    with pytest.raises(InvalidMemory) as e:
        memories.add(vault, given, body)
    problems = e.value.problems
    assert any(field in p.field and hint in p.message and p.path.endswith(".md") for p in problems), [str(p) for p in problems]
    assert "nothing was written" in str(e.value)
    assert snapshot(vault) == before
    assert git(vault.root, "for-each-ref") == branches
    assert not (vault.root / "etc").exists() and not (vault.root.parent / "etc").exists()


def test_secret_message_never_echoes_the_secret(vault):
    with pytest.raises(InvalidMemory) as e:
        memories.add(vault, fields(), f"key {AWS_KEY}")
    assert AWS_KEY not in str(e.value)


def test_get_refuses_unsafe_ids(vault):
    for bad in ("../x", "a/b", "..", ""):
        with pytest.raises(UsageError):
            vault.get(bad)


def test_cli_add_maps_invalid_memory_to_exit_5_with_lines(vault, capsys):
    from memrepo.cli.app import main
    before = snapshot(vault)
    code = main(["--vault", str(vault.root), "add", "--subject", "proj", "--summary", "s", "--body", f"k {AWS_KEY}"])
    err = capsys.readouterr().err
    assert code == 5  # invalid data
    assert ":body (line " in err and "aws-access-key-id" in err and "nothing was written" in err
    assert snapshot(vault) == before


def test_bad_kind_on_cli_is_a_clear_error_not_a_crash(vault, capsys):
    from memrepo.cli.app import main
    code = main(["--vault", str(vault.root), "add", "--kind", "gossip", "--summary", "s", "--body", "b"])
    assert code == 2  # a bad option value is a usage error
    assert "--kind 'gossip' is not one of" in capsys.readouterr().err


# ----------------------------------------------------------------- import

def test_import_with_a_secret_line_commits_nothing(vault, tmp_path):
    lines = [{"id": "mem_i1", "summary": "fine", "body": "ok"},
             {"id": "mem_i2", "summary": "leaky", "body": f"token {GITHUB_TOKEN}"},
             {"id": "mem_i3", "summary": "bad evidence", "evidence": ["/etc/passwd"]}]
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    before = snapshot(vault)
    with pytest.raises(InvalidMemory) as e:
        memories.import_jsonl(vault, src)
    text = str(e.value)
    assert f"{src}:line 2:body (line" in text and "github-token" in text
    assert f"{src}:line 3:evidence" in text
    assert "nothing was imported" in text
    assert snapshot(vault) == before


def test_hook_refusal_leaves_other_staged_work_staged(vault):
    """A refused commit changes nothing: the person's staged files are still staged."""
    (vault.root / "notes.txt").write_text("mine\n")
    place(vault, REL, sub("status: active", "status: done"), None)
    git(vault.root, "add", "notes.txt", REL)
    before = snapshot(vault)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k.startswith("GIT_CONFIG")}
    proc = subprocess.run(["git", "-C", str(vault.root), "commit", "-q", "-m", "x"], capture_output=True, text=True, env=env)
    assert proc.returncode == 1
    assert snapshot(vault) == before
    assert "A  notes.txt" in before[1]
