"""Bad input gets a one-line `path:field: message` error,
never a traceback, and never an invalid vault (write path, hook and validate)."""
from __future__ import annotations

import json

import pytest
from conftest import cli, git, person_git

from memrepo.review import validate

# ------------------------------------------------------------ cases 12 and 13: bad input

BASE_LINES = ["id: mem_bad", "layer: L2", "kind: knowledge", "subject: proj", "summary: a hand edit",
              "status: active", "source: user", "created: 2026-11-01T00:00:00+00:00"]


def raw_file(replace: dict[str, str | None] | None = None, extra: tuple[str, ...] = (), body: str = "body\n") -> bytes:
    replace = replace or {}
    lines = []
    for line in BASE_LINES:
        key = line.split(":", 1)[0]
        if key in replace:
            if replace[key] is not None:
                lines.append(replace[key])
        else:
            lines.append(line)
    return ("---\n" + "\n".join([*lines, *extra]) + "\n---\n" + body).encode("utf-8", "surrogatepass")


BAD_FILES = {
    "tags-int": (raw_file(extra=("tags: 5",)), "tags"),
    "tags-empty": (raw_file(extra=("tags:",)), "tags"),
    "evidence-float": (raw_file(extra=("evidence: 1.5",)), "evidence"),
    "kind-list": (raw_file({"kind": "kind: [a]"}), "kind"),
    "subject-list": (raw_file({"subject": "subject: [a, b]"}, extra=("fact: x.y",)), "subject"),
    "binary-tag": (raw_file(extra=("x-blob: !!binary aGVsbG8=",)), "line"),
    "set-tag": (raw_file(extra=("x-set: !!set {a: null}",)), "line"),
    "timestamp-tag": (raw_file({"created": "created: !!timestamp 2026-11-01T00:00:00+00:00"}), "line"),
    "anchor-without-alias": (raw_file({"summary": "summary: &a1 a hand edit"}), "line"),
    "nul-in-body": (raw_file(body="before\x00after\n"), "body"),
    "self-supersede": (raw_file({"status": "status: superseded"}, extra=("supersedes: mem_bad", "superseded_by: mem_bad")), "supersedes"),
    "weight-nan": (raw_file(extra=("weight: .nan",)), "weight"),
    "confidence-inf": (raw_file(extra=("confidence: .inf",)), "confidence"),
    "lone-surrogate-escape": (raw_file({"summary": 'summary: "bad \\ud800 text"'}), "line"),
}


def assert_one_line_errors(output: str, rel: str, field: str) -> None:
    assert "Traceback" not in output, output
    assert any(line.strip().startswith(f"{rel}:") and (field in line.split(":", 2)[1] or field == "line")
               for line in output.splitlines()), output


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_hand_edited_bad_front_matter_is_refused_by_validate_and_hook(vault, name):
    data, field = BAD_FILES[name]
    rel = "memories/L2/mem_bad.md"
    (vault.root / rel).write_bytes(data)
    problems = validate.validate_tree(vault)
    assert problems and all(p.path == rel for p in problems), [str(p) for p in problems]
    proc = cli(vault.root, "validate")
    assert proc.returncode == 1
    assert_one_line_errors(proc.stderr, rel, field)
    git(vault.root, "add", rel)
    proc = person_git(vault.root, "commit", "-m", "hand edit")
    assert proc.returncode == 1
    assert_one_line_errors(proc.stderr, rel, field)
    proc = cli(vault.root, "show", "mem_bad", "--json")
    assert "Traceback" not in proc.stderr


def test_supersedes_cycle_is_refused(vault):
    a = raw_file({"id": "id: mem_a", "status": "status: superseded"}, extra=("supersedes: mem_b", "superseded_by: mem_b"))
    b = raw_file({"id": "id: mem_b", "status": "status: superseded"}, extra=("supersedes: mem_a", "superseded_by: mem_a"))
    (vault.root / "memories/L2/mem_a.md").write_bytes(a)
    (vault.root / "memories/L2/mem_b.md").write_bytes(b)
    problems = validate.validate_tree(vault)
    assert any(p.field == "supersedes" and "cycle" in p.message for p in problems), [str(p) for p in problems]
    git(vault.root, "add", "memories")
    proc = person_git(vault.root, "commit", "-m", "loop")
    assert proc.returncode == 1 and "cycle" in proc.stderr


IMPORT_LINES = {
    "tags-int": ({"tags": 5}, "tags"),
    "tags-null": ({"tags": None, "kind": "event"}, None),          # null: the default (no tags)
    "evidence-float": ({"evidence": 1.5}, "evidence"),
    "kind-list": ({"kind": ["a"]}, "kind"),
    "subject-list": ({"subject": ["a"], "fact": "x.y"}, "subject"),
    "lone-surrogate": ({"summary": "bad \ud800 text"}, "summary"),
    "lone-surrogate-in-a-field-name": ({"x-k\ud800": "v"}, "x-k"),
    "lone-surrogate-in-a-nested-name": ({"x-k": {"a\ud800": "v"}}, "x-k"),
    "nul-in-body": ({"body": "a\x00b"}, "body"),
    "weight-nan": ({"weight": float("nan")}, "weight"),
    "self-supersede": ({"id": "mem_s", "supersedes": "mem_s", "status": "superseded", "superseded_by": "mem_s"}, "supersedes"),
}


@pytest.mark.parametrize("name", sorted(IMPORT_LINES))
def test_bad_import_lines_get_line_errors(vault, tmp_path, name):
    record, field = IMPORT_LINES[name]
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"summary": "fine", "layer": "L2", **record}), encoding="utf-8")
    head = vault.head()
    proc = cli(vault.root, "import", str(src))
    assert "Traceback" not in proc.stderr, proc.stderr
    if field is None:
        assert proc.returncode == 0, proc.stderr
        return
    assert proc.returncode != 0 and f"{src}:line 1:" in proc.stderr and field in proc.stderr, proc.stderr
    assert vault.head() == head


@pytest.mark.parametrize("args,stdin,word", [
    (["--summary", "s"], b"x\xff", "UTF-8"),
    (["--summary", "s", "--weight", "nan"], b"", "weight"),
    (["--summary", "s", "--confidence", "nan"], b"", "confidence"),
    (["--summary", "s", "--body", "a\x01b"], None, None),     # control characters other than NUL are text
])
def test_add_bad_values_get_one_line_errors(vault, args, stdin, word):
    head = vault.head()
    proc = cli(vault.root, "add", *args, stdin=stdin)
    assert "Traceback" not in proc.stderr, proc.stderr
    if word is None:
        return
    assert proc.returncode != 0 and word in proc.stderr, proc.stderr
    assert vault.head() == head
