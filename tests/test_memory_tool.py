"""Claude's memory tool kept by a vault, driven through the Anthropic SDK's own tool runner with
the tool calls Claude sends (the Messages API is the only stand-in: tests/scripted_claude.py).
Asserts the strings the SDK sends back and what git holds afterwards."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import git

pytest.importorskip("anthropic", reason="the Anthropic SDK is the 'claude' extra: run 'make install-test'")

from scripted_claude import ScriptedClaude  # noqa: E402

from memrepo import api  # noqa: E402
from memrepo.agents.claude_memory import MemrepoMemoryTool  # noqa: E402

LISTING = "Here're the files and directories up to 2 levels deep in {}, excluding hidden items and node_modules:"
PREFS = "# Preferences\nLikes green tea\nPrefers short answers\n"


def session(vault, *turns, agent="claude", sid="s-42"):
    return ScriptedClaude([list(t) for t in turns]).run(MemrepoMemoryTool(vault=vault.root, agent=agent, session=sid))


def texts(results):
    return [r["content"] for r in results]


def log(vault, *args):
    return git(vault.root, "log", "--format=%H%n%B%n-----", *args, "main")


def test_a_session_through_the_sdk_runner_and_its_history(vault):
    start = vault.head()
    results = session(vault,
                      [{"command": "view", "path": "/memories"}],
                      [{"command": "create", "path": "/memories/user/preferences.md", "file_text": PREFS}],
                      [{"command": "view", "path": "/memories/user/preferences.md"}],
                      [{"command": "str_replace", "path": "/memories/user/preferences.md",
                        "old_str": "Likes green tea", "new_str": "Likes oolong tea"}],
                      [{"command": "insert", "path": "/memories/user/preferences.md", "insert_line": 1,
                        "insert_text": "Lives in Berlin\n"}],
                      [{"command": "view", "path": "/memories", }],
                      [{"command": "rename", "old_path": "/memories/user/preferences.md",
                        "new_path": "/memories/user/profile.md"}],
                      [{"command": "view", "path": "/memories/user/profile.md", "view_range": [2, 3]}],
                      [{"command": "delete", "path": "/memories/user/profile.md"}],
                      [{"command": "view", "path": "/memories/user/profile.md"}])
    out = texts(results)
    assert out[0] == LISTING.format("/memories") + "\n0B\t/memories"
    assert out[1] == "File created successfully at: /memories/user/preferences.md"
    assert out[2] == ("Here's the content of /memories/user/preferences.md with line numbers:\n"
                      "     1\t# Preferences\n     2\tLikes green tea\n     3\tPrefers short answers\n     4\t")
    assert out[3] == ("The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
                      "     1\t# Preferences\n     2\tLikes oolong tea\n     3\tPrefers short answers\n     4\t")
    assert out[4] == "The file /memories/user/preferences.md has been edited."
    size = len("# Preferences\nLives in Berlin\nLikes oolong tea\nPrefers short answers\n")
    assert out[5] == LISTING.format("/memories") + f"\n{size}B\t/memories\n{size}B\t/memories/user/\n" \
        f"{size}B\t/memories/user/preferences.md"
    assert out[6] == "Successfully renamed /memories/user/preferences.md to /memories/user/profile.md"
    assert out[7] == ("Here's the content of /memories/user/profile.md with line numbers:\n"
                      "     2\tLives in Berlin\n     3\tLikes oolong tea")
    assert out[8] == "Successfully deleted /memories/user/profile.md"
    assert out[9] == "The path /memories/user/profile.md does not exist. Please provide a valid path."
    assert results[9]["is_error"] is True and not any(r.get("is_error") for r in results[:9])
    # one commit per mutating command, each naming the agent, the session and the path
    commits = git(vault.root, "rev-list", f"{start}..main").split()
    assert len(commits) == 5
    history = log(vault, f"{start}..")
    assert history.count("Memrepo-Agent: claude") == 5 and history.count("Memrepo-Session: s-42") == 5
    for action in ("memory-create", "memory-edit", "memory-rename", "memory-delete"):
        assert f"Memrepo-Action: {action}" in history
    # the memory is kept: archived with its last text, every version in history, vault valid
    archived = [r for r in vault.list() if r["status"] == "archived"]
    assert len(archived) == 1 and archived[0]["path"].startswith("archive/")
    m = vault.get(archived[0]["id"])
    assert m.meta["source"] == "agent" and m.meta["author"] == "claude" and m.meta["session"] == "s-42"
    assert m.meta["x-memory-path"] == "/memories/user/profile.md" and m.meta["subject"] == "user"
    assert m.body == "# Preferences\nLives in Berlin\nLikes oolong tea\nPrefers short answers\n"
    assert len(vault.history(m.id)) == 5
    assert api.validate_tree(vault) == []


def test_what_claude_sees_is_exactly_what_it_wrote(vault):
    texts_in = {"/memories/a.txt": "no final newline", "/memories/b.txt": "two\n\n", "/memories/c.txt": "",
                "/memories/d.md": "---\nlooks: like front matter\n---\nbody\n", "/memories/e.txt": "\n\nleading\r\nCRLF\r\n"}
    calls = [[{"command": "create", "path": p, "file_text": t}] for p, t in texts_in.items()]
    calls += [[{"command": "view", "path": p}] for p in texts_in]
    out = texts(session(vault, *calls))[len(texts_in):]
    for (path, text), shown in zip(texts_in.items(), out):
        lines = shown.split("\n", 1)[1].split("\n") if "\n" in shown else []
        assert "\n".join(line.split("\t", 1)[1] for line in lines) == text, path
        assert "source: agent" not in shown and "x-memory-path" not in shown


def test_str_replace_needs_exactly_one_match_and_insert_checks_its_line(vault):
    results = session(vault,
                      [{"command": "create", "path": "/memories/todo.md", "file_text": "- a\n- b\n- a\n"}],
                      [{"command": "str_replace", "path": "/memories/todo.md", "old_str": "- a", "new_str": "- c"}],
                      [{"command": "str_replace", "path": "/memories/todo.md", "old_str": "- z", "new_str": "- c"}],
                      [{"command": "insert", "path": "/memories/todo.md", "insert_line": 9, "insert_text": "x"}],
                      [{"command": "insert", "path": "/memories/todo.md", "insert_line": 3, "insert_text": "- end"}],
                      [{"command": "str_replace", "path": "/memories", "old_str": "a", "new_str": "b"}],
                      [{"command": "view", "path": "/memories/todo.md"}])
    out = texts(results)
    assert out[1] == "No replacement was performed. Multiple occurrences of old_str `- a` in lines: 1, 3. Please ensure it is unique"
    assert out[2] == "No replacement was performed, old_str `- z` did not appear verbatim in /memories/todo.md."
    assert out[3] == "Invalid `insert_line` parameter: 9. It should be within the range [0, 3]."
    assert out[4] == "The file /memories/todo.md has been edited."
    assert out[5] == "The path /memories is not a file."
    assert [r.get("is_error", False) for r in results] == [False, True, True, True, False, True, False]
    assert out[6].endswith("     3\t- a\n     4\t- end\n     5\t")


def test_paths_outside_memories_and_traversal_are_refused(vault, tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("do not read\n", encoding="utf-8")
    (vault.root / "memories" / "link").symlink_to(tmp_path)  # a link in the vault's folder leads nowhere here
    head = vault.head()
    results = session(vault,
                      [{"command": "view", "path": "/etc/passwd"}],
                      [{"command": "view", "path": "/memories/../../etc/passwd"}],
                      [{"command": "create", "path": "/memories/a/../../x.md", "file_text": "x"}],
                      [{"command": "create", "path": "/memories/%2e%2e/x.md", "file_text": "x"}],
                      [{"command": "view", "path": "/memoriesX/notes.md"}],
                      [{"command": "view", "path": "/memories/link/secret.txt"}],
                      [{"command": "delete", "path": "/memories"}],
                      [{"command": "rename", "old_path": "/memories", "new_path": "/memories/x"}])
    out = texts(results)
    assert out[0] == "Path must start with /memories, got: /etc/passwd"
    assert out[1] == "Path /memories/../../etc/passwd would escape /memories directory"
    assert out[2] == "Path /memories/a/../../x.md would escape /memories directory"
    assert out[3] == "Path /memories/%2e%2e/x.md would escape /memories directory"
    assert out[4] == "Path must start with /memories, got: /memoriesX/notes.md"
    assert out[5] == "The path /memories/link/secret.txt does not exist. Please provide a valid path."
    assert out[6] == "Cannot delete the /memories directory itself"
    assert out[7] == "Cannot rename the /memories directory itself"
    assert all(r["is_error"] for r in results) and vault.head() == head


def test_rename_refuses_an_existing_destination_and_create_replaces_in_place(vault):
    results = session(vault,
                      [{"command": "create", "path": "/memories/a.md", "file_text": "A\n"},
                       {"command": "create", "path": "/memories/b.md", "file_text": "B\n"}],
                      [{"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/b.md"}],
                      [{"command": "rename", "old_path": "/memories/nope.md", "new_path": "/memories/c.md"}],
                      [{"command": "create", "path": "/memories/a.md", "file_text": "A, second version\n"}],
                      [{"command": "view", "path": "/memories/a.md"}])
    out = texts(results)
    assert out[2] == "The destination /memories/b.md already exists"
    assert out[3] == "The path /memories/nope.md does not exist"
    assert out[4] == "File /memories/a.md has been overwritten (its previous text is kept in the vault's history)."
    assert out[5].endswith("     1\tA, second version\n     2\t")
    active = [r for r in vault.list(status="active") if r["summary"].startswith("A")]
    assert len(active) == 1  # one memory, edited in place: its earlier text is in git
    assert "A\n" in git(vault.root, "log", "-p", "main", "--", active[0]["path"])


def test_a_directory_is_renamed_and_deleted_whole(vault):
    results = session(vault,
                      [{"command": "create", "path": "/memories/projects/alpha/notes.md", "file_text": "alpha\n"},
                       {"command": "create", "path": "/memories/projects/alpha/todo.md", "file_text": "ship\n"},
                       {"command": "create", "path": "/memories/projects/beta.md", "file_text": "beta\n"}],
                      [{"command": "view", "path": "/memories/projects"}],
                      [{"command": "rename", "old_path": "/memories/projects/alpha", "new_path": "/memories/archive-2026/alpha"}],
                      [{"command": "delete", "path": "/memories/projects"}],
                      [{"command": "view", "path": "/memories"}])
    out = texts(results)
    assert out[3] == LISTING.format("/memories/projects") + ("\n16B\t/memories/projects\n11B\t/memories/projects/alpha/"
                                                            "\n6B\t/memories/projects/alpha/notes.md"
                                                            "\n5B\t/memories/projects/alpha/todo.md\n5B\t/memories/projects/beta.md")
    assert out[4] == "Successfully renamed /memories/projects/alpha to /memories/archive-2026/alpha"
    assert out[5] == "Successfully deleted /memories/projects"
    assert out[6] == LISTING.format("/memories") + ("\n11B\t/memories\n11B\t/memories/archive-2026/"
                                                   "\n11B\t/memories/archive-2026/alpha/")


def test_a_secret_is_refused_with_what_to_do_instead(vault):
    head = vault.head()
    key = "AKIA" + "Q3EXAMPLE7ABCD2Z"
    results = session(vault, [{"command": "create", "path": "/memories/deploy.md",
                               "file_text": f"Deploy with\naws_access_key_id = {key}\n"}])
    assert results[0]["is_error"]
    msg = results[0]["content"]
    assert "was not written" in msg and "line 2" in msg and "where the secret lives" in msg and key not in msg
    assert vault.head() == head


def test_a_file_over_the_size_cap_is_refused(vault):
    (vault.root / ".memrepo" / "config.toml").write_text("[memory_tool]\nmax_file_chars = 100\n", encoding="utf-8")
    git(vault.root, "commit", "-qam", "smaller memory files")
    results = session(api.Vault(vault.root), [{"command": "create", "path": "/memories/long.md", "file_text": "x" * 101}])
    assert results[0]["is_error"] and "over the 100-character cap" in results[0]["content"]
    assert "split the notes" in results[0]["content"]


def test_high_risk_files_become_proposals_the_model_cannot_apply(vault):
    results = session(vault,
                      [{"command": "create", "path": "/memories/L3/principles.md", "file_text": "Never deploy on Friday\n"}],
                      [{"command": "create", "path": "/memories/constraints/db.md", "file_text": "Never drop tables\n"}],
                      [{"command": "view", "path": "/memories/L3/principles.md"}],
                      [{"command": "create", "path": "/memories/L3/principles.md", "file_text": "again\n"}])
    out = texts(results)
    assert out[0].startswith("File created successfully at: /memories/L3/principles.md\nmemrepo: this change is pending "
                             "review in proposal ")
    assert "long-term layer L3" in out[0] and "constraint" in out[1]
    assert results[2]["is_error"] and "pending review in proposal" in out[2]
    assert results[3]["is_error"] and "pending review" in out[3]
    props = api.list_proposals(vault)
    assert len(props) == 2 and not [r for r in vault.list(status="active") if r["kind"] in ("principle", "constraint")]
    api.apply(vault, next(p.id for p in props if "L3" in p.reason))
    results = session(vault, [{"command": "view", "path": "/memories/L3/principles.md"}],
                      [{"command": "str_replace", "path": "/memories/L3/principles.md", "old_str": "Friday",
                        "new_str": "Friday or Saturday"}])
    assert texts(results)[0].endswith("     1\tNever deploy on Friday\n     2\t")
    assert "pending review in proposal" in texts(results)[1]  # a reviewed memory changes only through review again
    assert api.validate_tree(vault) == []
    p = subprocess.run([sys.executable, "-m", "memrepo", "--vault", str(vault.root), "proposals", "--json"],
                       capture_output=True, text=True)
    assert len(json.loads(p.stdout)) == 2


def test_memory_files_are_searchable_in_chinese_and_english(vault):
    session(vault, [{"command": "create", "path": "/memories/项目/数据库.md", "file_text": "配置数据库连接池为 50\n"}],
            [{"command": "create", "path": "/memories/ops/runbook.md", "file_text": "Restart the payment worker with care\n"}])
    hits, _ = api.search(vault, "数据库", limit=5)
    assert hits.hits and hits.hits[0].summary.startswith("配置数据库连接池")
    hits, _ = api.search(vault, "payment worker", limit=5)
    assert hits.hits and vault.get(hits.hits[0].id).meta["x-memory-path"] == "/memories/ops/runbook.md"
    m = vault.get(hits.hits[0].id)
    assert m.meta["subject"] == "ops" and m.meta["layer"] == "L1" and m.meta["fact"] == "memory:ops/runbook.md"


def test_the_sdk_sees_the_tool_as_memory_20250818(vault):
    tool = MemrepoMemoryTool(vault=vault.root)
    assert tool.to_dict() == {"type": "memory_20250818", "name": "memory"} and tool.name == "memory"
    assert tool.call({"command": "view", "path": "/memories"}).startswith(LISTING.format("/memories"))


def test_delete_of_a_reviewed_memory_is_a_proposal_and_remove_can_be_configured(vault):
    session(vault, [{"command": "create", "path": "/memories/L2/habits.md", "file_text": "Reviews PRs in the morning\n"}])
    api.apply(vault, api.list_proposals(vault)[0].id)
    out = texts(session(vault, [{"command": "delete", "path": "/memories/L2/habits.md"}]))
    assert out[0].startswith("Successfully deleted /memories/L2/habits.md\nmemrepo: this change is pending review")
    assert [r["status"] for r in vault.list() if r["summary"].startswith("Reviews PRs")] == ["active"]
    (vault.root / ".memrepo" / "config.toml").write_text('[memory_tool]\ndelete = "remove"\n', encoding="utf-8")
    git(vault.root, "commit", "-qam", "memory tool deletes remove")
    fresh = api.Vault(vault.root)
    session(fresh, [{"command": "create", "path": "/memories/scratch.md", "file_text": "temp\n"}],
            [{"command": "delete", "path": "/memories/scratch.md"}])
    assert not [r for r in fresh.list() if r["summary"] == "temp"]
    assert "temp" in git(vault.root, "log", "-p", "main", "--", "memories")


def test_the_async_class_runs_the_same_commands(vault):
    import asyncio

    from anthropic.types.beta import BetaMemoryTool20250818CreateCommand, BetaMemoryTool20250818ViewCommand

    from memrepo.agents.claude_memory import AsyncMemrepoMemoryTool
    tool = AsyncMemrepoMemoryTool(vault=vault.root, session="async")

    async def main():
        await tool.create(BetaMemoryTool20250818CreateCommand(command="create", path="/memories/n.md", file_text="hi\n"))
        return await tool.view(BetaMemoryTool20250818ViewCommand(command="view", path="/memories/n.md"))
    assert asyncio.run(main()).endswith("     1\thi\n     2\t")
