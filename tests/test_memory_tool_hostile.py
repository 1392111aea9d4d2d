"""Claude's memory tool under odd and hostile input, through the Anthropic SDK's own dispatch
(``tool.call(input)``: the SDK builds the command object and calls our method, as its tool
runner does): paths that collide with files waiting for review, text that is not valid
Unicode, paths that pass the checks but not the memory schema."""
from __future__ import annotations

import json

import pytest
from conftest import cli

pytest.importorskip("anthropic", reason="the Anthropic SDK is the 'claude' extra: run 'make install-test'")

from anthropic.lib.tools import ToolError  # noqa: E402

from memrepo import api  # noqa: E402
from memrepo.agents import memory_tool  # noqa: E402
from memrepo.agents.claude_memory import MemrepoMemoryTool  # noqa: E402


def tool(vault, session="s-1"):
    return MemrepoMemoryTool(vault=vault.root, session=session)


def no_file_is_also_a_folder(vault) -> None:
    paths = set(memory_tool.files(vault))
    assert not [p for p in paths if any(q.startswith(p + "/") for q in paths)]


def test_nothing_goes_below_a_file_that_waits_for_review(vault):
    """/memories/L2/x.md waits for review as a file: creating /memories/L2/x.md/y.md (or
    renaming something there) would give the vault a file and a folder of one name once both
    are applied, and a later delete of x.md would take y.md with it."""
    t = tool(vault)
    assert "pending review in proposal" in t.call({"command": "create", "path": "/memories/L2/x.md", "file_text": "a\n"})
    with pytest.raises(ToolError, match="pending review"):
        t.call({"command": "create", "path": "/memories/L2/x.md/y.md", "file_text": "b\n"})
    t.call({"command": "create", "path": "/memories/notes.md", "file_text": "c\n"})
    with pytest.raises(ToolError, match="pending review"):
        t.call({"command": "rename", "old_path": "/memories/notes.md", "new_path": "/memories/L2/x.md/notes.md"})
    for p in api.list_proposals(vault):
        api.apply(vault, p.id)
    no_file_is_also_a_folder(vault)
    assert cli(vault.root, "validate").returncode == 0


def test_text_that_is_not_unicode_is_refused_with_what_to_do(vault):
    """JSON can carry half of an emoji ("\\ud83d"); the model is told, nothing is written."""
    start = vault.head()
    with pytest.raises(ToolError, match="lone surrogate"):
        tool(vault).call({"command": "create", "path": "/memories/emoji.md", "file_text": "smile \ud83d\n"})
    assert vault.head() == start


TRANSCRIPT_LINE = '{"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "%s"}]}}'


def test_half_an_emoji_in_a_hook_payload_or_a_transcript_is_read_not_a_crash(vault, tmp_path):
    """Claude Code cuts long tool output by UTF-16 units, so a transcript can hold "\\ud83d"
    alone; a prompt or a compaction summary can too. Each is read with U+FFFD in its place."""
    api.add(vault, {"subject": "acme", "kind": "preference", "summary": "Acme prefers email follow-ups"}, "")
    recall = cli(vault.root, "recall", "--hook", stdin='{"session_id": "s", "prompt": "acme follow-ups \\ud83d"}')
    assert recall.returncode == 0 and "Acme prefers email" in recall.stdout, recall.stderr
    lines = ['{"type": "user", "message": {"role": "user", "content": "hello"}}',
             '{"type": "assistant", "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]}}',
             TRANSCRIPT_LINE % ("x" * 9000 + "\\ud83d"),
             *['{"type": "assistant", "message": {"role": "assistant", "content": "ok"}}'] * 4]
    (tmp_path / "t.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    pruned = cli(vault.root, "prune", str(tmp_path / "t.jsonl"))
    assert pruned.returncode == 0 and "trimmed 1" in pruned.stderr, pruned.stderr
    payload = {"session_id": "s", "hook_event_name": "PostCompact",
               "compact_summary": "# memrepo checkpoint\n## What\nShipped the fix \ud83d\n## Next\nrelease notes"}
    filed = cli(vault.root, "flush", "--hook", "--json", stdin=json.dumps(payload))   # ASCII: "\\ud83d" escaped
    assert filed.returncode == 0 and '"written": 1' in filed.stdout, filed.stderr


@pytest.mark.parametrize("path, words", [
    ("/memories/" + " " * 70 + "x.md", "too long"),
    ("/memories/" + "%" * 65 + ".md", "too long"),
    ("/memories/ /x.md", "white space"),
    ("/memories/   /x.md", "white space"),
])
def test_a_path_the_vault_cannot_hold_is_refused_in_the_models_words(vault, path, words):
    """Paths that pass the first checks but not the memory's schema (its fact key, its
    subject) are refused by what is wrong with the path, not by the schema's field names."""
    with pytest.raises(ToolError, match=words) as refused:
        tool(vault).call({"command": "create", "path": path, "file_text": "x\n"})
    assert "memory:" not in str(refused.value) and "not allowed here" not in str(refused.value)


def test_a_move_into_review_names_each_memory_once(vault):
    """A rename into a long-term layer writes each memory at its new place and removes the old
    file: one proposal, each memory once in its list (it was listed twice)."""
    t = tool(vault)
    for name in ("a", "b"):
        t.call({"command": "create", "path": f"/memories/notes/{name}.md", "file_text": f"{name}\n"})
    assert "pending review" in t.call({"command": "rename", "old_path": "/memories/notes", "new_path": "/memories/L3/notes"})
    (proposal,) = api.list_proposals(vault)
    assert len(proposal.ids) == 2 == len(set(proposal.ids))
    listed = cli(vault.root, "proposals")
    assert listed.stdout.count(proposal.ids[0]) == 1
    api.apply(vault, proposal.id)
    assert sorted(memory_tool.files(vault)) == ["L3/notes/a.md", "L3/notes/b.md"]
