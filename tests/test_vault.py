"""The vault: init, finding it, the add/show/list/log path, import, concurrent writers."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest
from conftest import git, person_env
from typer.testing import CliRunner

from memrepo.cli.app import app, main
from memrepo.errors import Busy, InvalidMemory, VaultExists, VaultNotFound
from memrepo.review import hooks
from memrepo.review import writes as memories
from memrepo.store.vault import Vault

runner = CliRunner()


def commits(vault, rev="main") -> int:
    return int(git(vault.root, "rev-list", "--count", rev))


def tracked_memories(vault) -> list[str]:
    return [p for p in git(vault.root, "ls-tree", "-r", "--name-only", "main", "memories").splitlines()
            if p.endswith(".md")]



# ----------------------------------------------------------------- init

def test_init_creates_layout_one_commit_on_main_and_hooks(vault):
    root = vault.root
    for folder in ("memories/L1", "memories/L2", "memories/L3", "memories/L4", "archive"):
        assert (root / folder).is_dir(), folder
    assert (root / ".memrepo/config.toml").is_file()
    assert ".memrepo/index/" in (root / ".gitignore").read_text()
    assert ".memrepo/state/" in (root / ".gitignore").read_text()
    assert git(root, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert commits(vault) == 1
    assert git(root, "branch", "--format=%(refname:short)").split() == ["main"]
    assert git(root, "status", "--porcelain") == ""
    for name in ("pre-commit", "pre-merge-commit"):
        hook = root / ".git/hooks" / name
        assert os.access(hook, os.X_OK) and hooks.MARKER in hook.read_text()


def test_derived_state_is_never_committed(vault):
    memories.add(vault, {"summary": "x"}, "body")
    assert (vault.root / ".memrepo/state").is_dir()
    assert git(vault.root, "status", "--porcelain") == ""
    assert not [p for p in git(vault.root, "ls-files").splitlines() if p.startswith(".memrepo/state")]


def test_init_refuses_an_existing_vault(vault):
    head = vault.head()
    with pytest.raises(VaultExists, match="already holds a memrepo vault"):
        Vault.init(vault.root)
    assert vault.head() == head


def test_init_refuses_a_non_empty_directory(tmp_path):
    target = tmp_path / "stuff"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    with pytest.raises(VaultExists, match="not empty"):
        Vault.init(target)
    assert sorted(p.name for p in target.iterdir()) == ["keep.txt"]


def test_init_refuses_a_file(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(VaultExists):
        Vault.init(tmp_path / "f")


def test_init_via_cli_and_refusal_exit_code(tmp_path, capsys):
    assert main(["init", str(tmp_path / "v")]) == 0
    assert main(["init", str(tmp_path / "v")]) == 4  # conflict: already a vault
    assert "already holds a memrepo vault" in capsys.readouterr().err


def test_existing_user_hook_is_kept_as_legacy_and_still_runs(vault, tmp_path):
    hooks_dir = vault.root / ".git/hooks"
    marker = tmp_path / "legacy-ran"
    (hooks_dir / "pre-commit").write_text(f"#!/bin/sh\necho ran >> '{marker}'\nexit 0\n")
    (hooks_dir / "pre-commit").chmod(0o755)
    done = hooks.install(vault.root)
    assert any("kept your hook as pre-commit.legacy" in d for d in done)
    assert (hooks_dir / "pre-commit.legacy").read_text().startswith("#!/bin/sh\necho ran")
    assert hooks.install(vault.root) == ["pre-commit: installed", "pre-merge-commit: installed"]  # idempotent
    (vault.root / "notes.txt").write_text("n\n")
    git(vault.root, "add", "notes.txt")
    git(vault.root, "commit", "-q", "-m", "notes")
    assert marker.read_text() == "ran\n"


def test_failing_legacy_hook_still_blocks_the_commit(vault):
    hooks_dir = vault.root / ".git/hooks"
    (hooks_dir / "pre-commit.legacy").write_text("#!/bin/sh\necho 'legacy says no' >&2\nexit 3\n")
    (hooks_dir / "pre-commit.legacy").chmod(0o755)
    (vault.root / "notes.txt").write_text("n\n")
    git(vault.root, "add", "notes.txt")
    proc = subprocess.run(["git", "-C", str(vault.root), "commit", "-m", "x"], capture_output=True, text=True, env=person_env())
    assert proc.returncode != 0 and "legacy says no" in proc.stderr
    assert commits(vault) == 1


# ----------------------------------------------------------------- finding

def test_find_from_cwd_subdirectory(vault, monkeypatch):
    monkeypatch.chdir(vault.root / "memories/L2")
    assert Vault.find().root == vault.root
    result = runner.invoke(app, ["list", "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout) == []


def test_find_from_flag_and_env(vault, tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    with pytest.raises(VaultNotFound, match="--vault PATH"):
        Vault.find()
    assert Vault.find(explicit=vault.root).root == vault.root
    assert runner.invoke(app, ["--vault", str(vault.root), "list"]).exit_code == 0
    monkeypatch.setenv("MEMREPO_VAULT", str(vault.root))
    assert Vault.find().root == vault.root
    out = runner.invoke(app, ["add", "--summary", "via env", "--body", "b", "--json"])
    assert out.exit_code == 0, out.output
    assert vault.get(json.loads(out.stdout)["id"]).meta["summary"] == "via env"


def test_find_refuses_a_plain_directory(tmp_path, capsys):
    with pytest.raises(VaultNotFound):
        Vault.find(explicit=tmp_path)
    assert main(["--vault", str(tmp_path), "list"]) == 3  # no vault there
    assert "is not a memrepo vault" in capsys.readouterr().err


# ----------------------------------------------------------------- add

def test_add_applies_documented_defaults_and_commits_once(vault):
    before = commits(vault)
    result = memories.add(vault, {}, "# Checked the deploy\nAll green.\n")
    m = vault.get(result.id).meta
    assert re.fullmatch(r"mem_\d{8}_[a-z0-9]{6}", result.id)
    assert (m["layer"], m["kind"], m["subject"], m["status"], m["source"], m["scope"]) == \
           ("L1", "event", "general", "active", "user", "shared")
    assert m["summary"] == "Checked the deploy"
    assert m["author"] == "Test Person"
    assert m["risk"] == "low" and m["risk_reason"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", m["created"])
    assert result.path == f"memories/L1/{m['created'][:10]}/{result.id}.md"
    assert commits(vault) == before + 1
    assert git(vault.root, "diff-tree", "--no-commit-id", "--name-only", "-r", "main").split() == [result.path]
    message = git(vault.root, "log", "-1", "--format=%B", "main")
    assert message.startswith(f"memrepo: add {result.id} [general] Checked the deploy")
    assert f"Memrepo-Id: {result.id}" in message
    assert git(vault.root, "status", "--porcelain") == ""
    assert (vault.root / result.path).read_bytes() == git(vault.root, "show", f"main:{result.path}").encode()


def test_add_author_from_env_and_given_id_and_layer(vault, monkeypatch):
    monkeypatch.setenv("MEMREPO_AUTHOR", "agent-7")
    result = memories.add(vault, {"id": "mem_given", "layer": "L3", "summary": "Prefer small modules"}, "")
    m = vault.get("mem_given").meta
    assert (result.id, result.path, m["kind"], m["author"]) == ("mem_given", "memories/L3/mem_given.md", "principle", "agent-7")


def test_add_refuses_a_duplicate_id(vault):
    memories.add(vault, {"id": "mem_once", "summary": "one"}, "")
    head = vault.head()
    with pytest.raises(InvalidMemory, match="already exists"):
        memories.add(vault, {"id": "mem_once", "layer": "L2", "summary": "two"}, "")
    assert vault.head() == head


def test_cli_add_json_and_stdin_body(vault):
    result = runner.invoke(app, ["--vault", str(vault.root), "add", "--subject", "project-alpha", "--kind", "knowledge",
                                 "--tag", "#错误码", "--tag", "db", "--link", "mem_other", "--evidence", "logs/a.md#L1-L3",
                                 "--json"], input="数据库连接池配置为 20。\n")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert {"id", "path", "status", "commit"} <= set(data)
    assert data["status"] == "active" and data["commit"] == vault.head()
    m = vault.get(data["id"])
    assert m.body == "数据库连接池配置为 20。\n"
    assert m.meta["summary"] == "数据库连接池配置为 20。"
    assert (list(m.meta["tags"]), list(m.meta["links"]), list(m.meta["evidence"])) == \
           (["#错误码", "db"], ["mem_other"], ["logs/a.md#L1-L3"])


def test_show_list_filters_and_log(vault):
    a = memories.add(vault, {"id": "mem_a", "subject": "alpha", "kind": "preference", "summary": "A"}, "")
    memories.add(vault, {"id": "mem_b", "subject": "beta", "layer": "L2", "kind": "knowledge", "summary": "B"}, "")
    memories.add(vault, {"id": "mem_c", "subject": "alpha", "layer": "L3", "summary": "C"}, "")
    root = str(vault.root)

    def ids(*args):
        out = runner.invoke(app, ["--vault", root, "list", "--json", *args])
        assert out.exit_code == 0, out.output
        return [r["id"] for r in json.loads(out.stdout)]

    assert ids() == ["mem_a", "mem_b", "mem_c"]
    assert ids("--subject", "alpha") == ["mem_a", "mem_c"]
    assert ids("--layer", "L2") == ["mem_b"]
    assert ids("--kind", "principle") == ["mem_c"]
    assert ids("--status", "active", "--subject", "beta") == ["mem_b"]
    assert ids("--status", "superseded") == []
    shown = runner.invoke(app, ["--vault", root, "show", "mem_a"])
    assert shown.exit_code == 0 and shown.stdout == (vault.root / a.path).read_text()
    shown_json = json.loads(runner.invoke(app, ["--vault", root, "show", "mem_a", "--json"]).stdout)
    assert shown_json["id"] == "mem_a" and shown_json["path"] == a.path
    log = json.loads(runner.invoke(app, ["--vault", root, "log", "mem_a", "--json"]).stdout)
    assert [e["commit"] for e in log] == [a.commit]
    assert [e.commit for e in vault.history("mem_a")] == [a.commit]
    missing = runner.invoke(app, ["--vault", root, "show", "mem_nope"])
    assert missing.exit_code == 3


def test_log_follows_hand_edits(vault):
    a = memories.add(vault, {"id": "mem_edit", "subject": "s", "summary": "first"}, "body")
    path = vault.root / a.path
    path.write_text(path.read_text().replace("summary: first", "summary: second"))
    git(vault.root, "commit", "-q", "-am", "hand edit")
    assert [e.subject for e in vault.history("mem_edit")][0] == "hand edit"
    assert vault.get("mem_edit").meta["summary"] == "second"


def test_staged_unrelated_changes_are_not_swept_into_memrepo_commits(vault):
    first = memories.add(vault, {"id": "mem_first", "subject": "s", "summary": "first"}, "body")
    (vault.root / "notes.txt").write_text("my notes\n")
    path = vault.root / first.path
    path.write_text(path.read_text().replace("body", "edited body"))
    git(vault.root, "add", "notes.txt", first.path)
    staged_before = git(vault.root, "diff", "--cached", "--name-only").split()
    result = memories.add(vault, {"id": "mem_second", "subject": "s", "summary": "second"}, "")
    assert git(vault.root, "diff-tree", "--no-commit-id", "--name-only", "-r", result.commit).split() == [result.path]
    assert git(vault.root, "diff", "--cached", "--name-only").split() == staged_before
    assert "edited body" in path.read_text()
    assert sorted(git(vault.root, "status", "--porcelain").splitlines()) == sorted([f"M  {first.path}", "A  notes.txt"])


# ----------------------------------------------------------------- import

def write_jsonl(path, records):
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in records) + "\n",
                    encoding="utf-8")
    return path


def test_import_is_one_commit_with_defaults_and_given_ids(vault, tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", [
        {"id": "mem_imp1", "subject": "alpha", "layer": "L2", "summary": "Prefers tabs", "body": "Tabs."},
        {"summary": "没有 id 的记忆", "body": "自动生成 id", "source": "user"},
        {"id": "mem_imp3", "layer": "L1", "created": "2025-01-02T03:04:05+00:00", "status": "superseded",
         "subject": "alpha", "summary": "old"},
    ])
    before = commits(vault)
    result = memories.import_jsonl(vault, src)
    assert result.count == 3 and result.commit == vault.head() and commits(vault) == before + 1
    assert vault.get("mem_imp1").path == "memories/L2/mem_imp1.md"
    assert vault.get("mem_imp3").path == "memories/L1/2025-01-02/mem_imp3.md"
    assert vault.get("mem_imp3").meta["status"] == "superseded"  # statuses given in the file are kept
    generated = [r for r in vault.list() if r["summary"] == "没有 id 的记忆"][0]
    m = vault.get(generated["id"]).meta
    assert m["source"] == "import" and m["x-original-source"] == "user" and m["kind"] == "event"
    assert len(git(vault.root, "diff-tree", "--no-commit-id", "--name-only", "-r", "main").split()) == 3
    assert "import 3 memories" in git(vault.root, "log", "-1", "--format=%s")
    assert git(vault.root, "status", "--porcelain") == ""


def test_import_reports_bad_lines_by_number_and_commits_nothing(vault, tmp_path):
    src = write_jsonl(tmp_path / "bad.jsonl", [
        {"id": "mem_ok", "summary": "fine"},
        "{not json",
        {"id": "mem_badlayer", "layer": "L9", "summary": "x"},
        "[1, 2]",
        "",
        {"id": "mem_ok", "summary": "duplicate id"},
    ])
    head = vault.head()
    with pytest.raises(InvalidMemory) as e:
        memories.import_jsonl(vault, src)
    text = str(e.value)
    for n in (2, 3, 4):
        assert f"{src}:line {n}:" in text, text
    assert f"{src}:line 6:id: 'mem_ok' is also given on line 1" in text
    assert vault.head() == head and git(vault.root, "status", "--porcelain") == ""


def test_import_never_lets_a_repeated_id_overwrite_an_earlier_line(vault, tmp_path):
    src = write_jsonl(tmp_path / "dup.jsonl", [{"id": "mem_d", "summary": "one"}, {"id": "mem_d", "summary": "two"}])
    with pytest.raises(InvalidMemory, match="line 2:id: 'mem_d' is also given on line 1"):
        memories.import_jsonl(vault, src)
    assert vault.list() == []
    result = memories.import_jsonl(vault, src, skip_invalid=True)
    assert result.count == 1 and vault.get("mem_d").meta["summary"] == "one"


def test_import_skip_invalid_commits_the_good_lines(vault, tmp_path):
    src = write_jsonl(tmp_path / "mixed.jsonl", [{"id": "mem_g1", "summary": "good"}, "{oops",
                                                 {"id": "mem_g2", "summary": "good too"}])
    result = memories.import_jsonl(vault, src, skip_invalid=True)
    assert result.count == 2 and [str(p).split(":")[1] for p in result.skipped] == ["line 2"]
    assert {r["id"] for r in vault.list()} == {"mem_g1", "mem_g2"}
    out = runner.invoke(app, ["--vault", str(vault.root), "import", str(src), "--json"])
    assert out.exit_code == 5  # the same ids again: refused as a whole (invalid data)


# ----------------------------------------------------------------- concurrency

WRITER = textwrap.dedent("""
    import sys, json
    from memrepo.review import writes as memories
    from memrepo.errors import Busy
    from memrepo.store.vault import Vault
    root, name = sys.argv[1], sys.argv[2]
    ok, busy = 0, 0
    for i in range(20):
        with Vault.find(explicit=root) as vault:
            try:
                memories.add(vault, {"id": f"mem_{name}_{i}", "subject": name, "summary": f"{name} {i}"}, "b")
                ok += 1
            except Busy as e:
                assert "busy" in str(e) and "retry" in str(e)
                busy += 1
    print(json.dumps({"ok": ok, "busy": busy}))
""")


def test_two_concurrent_writers_lose_nothing(vault):
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(vault.root), name], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for name in ("w1", "w2")]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    counts = [json.loads(o[0]) for o in outs]
    ok = sum(c["ok"] for c in counts)
    assert ok + sum(c["busy"] for c in counts) == 40
    assert ok == 40  # with a 10 s bound nobody should have to give up
    assert commits(vault) == 1 + ok
    assert len(tracked_memories(vault)) == ok
    assert git(vault.root, "status", "--porcelain") == ""
    git(vault.root, "fsck", "--no-progress")
    from memrepo.review import validate
    assert validate.validate_tree(vault) == []


def test_busy_after_a_bounded_wait(vault, monkeypatch, capsys):
    monkeypatch.setenv("MEMREPO_LOCK_TIMEOUT", "0.3")
    head = vault.head()
    with vault.lock():
        other = Vault(vault.root)
        with pytest.raises(Busy, match="busy.*retry"):
            memories.add(other, {"summary": "blocked"}, "")
        assert main(["--vault", str(vault.root), "add", "--summary", "blocked", "--body", "b"]) == 75  # busy
        assert "busy" in capsys.readouterr().err
        other.close()
    assert vault.head() == head
    memories.add(vault, {"summary": "after"}, "")
    assert commits(vault) == 2
