"""What the person's window shows, as library calls: the inbox, a memory's timeline and
neighbours, the graph around a memory or a subject, pages of memories, the last runs."""
from __future__ import annotations

import datetime as dt
import json

import pytest
from conftest import git

from memrepo import api
from memrepo.errors import NotFound, UsageError
from memrepo.review import writes
from memrepo.team import citations


def fact(vault, memory_id, summary, **extra):
    fields = {"id": memory_id, "subject": "proj", "fact": "db.pool", "layer": "L2", "kind": "knowledge",
              "summary": summary, **extra}
    return writes.add(vault, fields, f"{summary}.")


def test_the_inbox_lists_open_proposals_newest_first_with_sources_and_counts(vault, monkeypatch):
    fact(vault, "mem_old", "pool 10")
    person = fact(vault, "mem_p", "pool 20")                          # a person overriding a fact
    monkeypatch.setenv("MEMREPO_AUTHOR", "agent-7")
    agent = writes.add(vault, {"id": "mem_g", "subject": "user", "fact": "ui.theme", "kind": "constraint",
                               "summary": "dark only"}, "")
    inferred = writes.add(vault, {"id": "mem_i", "subject": "user", "kind": "preference", "summary": "likes tea",
                                  "source": "model-inference"}, "")
    box = api.inbox(vault, now=dt.datetime.now(dt.UTC) + dt.timedelta(hours=2))
    assert {i.id for i in box.items} == {inferred.proposal, agent.proposal, person.proposal}
    created = [i.created for i in box.items]
    assert created == sorted(created, reverse=True)                  # newest first
    by = {i.id: i for i in box.items}
    assert by[person.proposal].source == "person" and by[agent.proposal].source == "agent"
    assert by[inferred.proposal].source == "agent"
    assert box.counts == {"person": 1, "agent": 2, "distill": 0, "arbitration": 0, "clean-up": 0}
    item = by[person.proposal]
    assert item.memories[0]["fact"] == "db.pool" and "supersede" in item.reason
    assert item.age_seconds >= 7200 and item.author
    assert box.nightly is None and box.notices == ()


def test_the_inbox_shows_notices_and_the_last_nightly_run(vault):
    fact(vault, "mem_old", "pool 10")
    citations.cite(vault, ["mem_old"], by="analyst", ref="report-1")
    p = fact(vault, "mem_new", "pool 20")
    api.apply(vault, p.proposal)
    api.nightly(vault)
    box = api.inbox(vault)
    [notice] = box.notices
    assert notice["cites"] == "mem_old" and notice["status"] == "superseded"
    assert box.nightly is not None and "distill" in box.nightly


def test_a_timeline_holds_every_version_with_who_why_and_undone_steps(vault):
    fact(vault, "mem_old", "pool 10")
    p = fact(vault, "mem_new", "pool 20", evidence=["logs/load.md#L1"])
    api.apply(vault, p.proposal, reviewer="Ann Reviewer")
    rollback = api.rollback(vault, "mem_new", reason="load test was wrong")
    entries = api.timeline(vault, "mem_old")
    assert [e.action for e in entries] == ["rollback", "apply", "add"]
    newest, applied, added = entries
    assert newest.undoes == applied.commit and applied.undone_by == rollback
    assert newest.reason and "load test was wrong" in newest.reason
    assert applied.proposal == p.proposal and applied.reviewer == "Ann Reviewer"
    assert "supersede" in (applied.reason or "")
    changes = {v.id: (v.before, v.after) for v in applied.versions}
    assert changes == {"mem_new": (None, "active"), "mem_old": ("active", "superseded")}
    assert {v.id: v.after for v in newest.versions} == {"mem_new": "rolled_back", "mem_old": "active"}
    assert [e.commit for e in api.timeline(vault, "mem_new")] == [e.commit for e in entries]


def test_neighbours_are_what_a_memory_points_at_and_what_mentions_it(vault):
    writes.add(vault, {"id": "mem_a", "subject": "s", "summary": "alpha", "links": ["mem_b"]}, "see [[mem_c]]")
    writes.add(vault, {"id": "mem_b", "subject": "s", "summary": "beta"}, "")
    writes.add(vault, {"id": "mem_c", "subject": "s", "summary": "gamma", "cites": ["mem_a"]}, "")
    writes.add(vault, {"id": "mem_x", "subject": "s", "summary": "unrelated"}, "mem_ab and mem_a.b are other ids")
    found = {(n.id, n.direction, n.relation) for n in api.neighbours(vault, vault.get("mem_a"))}
    assert ("mem_b", "out", "link") in found and ("mem_c", "out", "wikilink") in found
    assert ("mem_c", "in", "mentions") in found
    assert not any(n[0] == "mem_x" for n in found)              # an id that merely starts the same is no mention


def test_the_graph_around_a_memory_is_cut_to_the_strongest_and_says_so(vault):
    ids = [f"mem_n{k:02d}" for k in range(12)]
    writes.add(vault, {"id": "mem_hub", "subject": "hub", "summary": "the hub <b>", "links": ids[:10]}, "")
    for k, i in enumerate(ids):
        writes.add(vault, {"id": i, "subject": "hub", "summary": f"node {k}", "links": ["mem_hub"] if k >= 10 else []}, "")
    view = api.graph_around(vault, memory_id="mem_hub", limit=5)
    assert view.candidates == 12 and view.cut and len([n for n in view.nodes if n.ring == 1]) == 5
    assert all(n.activity is not None for n in view.nodes)
    svg = api.graph_svg(view, href="/memory/")
    assert svg.startswith("<svg") and svg.count("<circle") == len(view.nodes)
    assert "the hub &lt;b&gt;" in svg and "<b>" not in svg and 'href="/memory/mem_n00"' in svg
    whole = api.graph_around(vault, subject="hub", limit=50)
    assert not whole.cut and len(whole.nodes) == 14 and whole.nodes[0].kind == "subject"
    with pytest.raises(NotFound):
        api.graph_around(vault, subject="nobody")
    with pytest.raises(UsageError):
        api.graph_around(vault)


def test_the_graph_reads_main_once_per_commit_for_any_memory_or_subject(vault, monkeypatch):
    """Building the whole graph reads every memory on main (40 s at 100,000 memories): a person
    clicking from node to node must not pay it on every page, and a new commit is seen."""
    from memrepo.lifecycle import decay_run
    reads = []
    build = decay_run.build_graph
    monkeypatch.setattr(decay_run, "build_graph", lambda v, **kw: reads.append(v.head()) or build(v, **kw))
    writes.add(vault, {"id": "mem_a", "subject": "s", "summary": "a", "links": ["mem_b"]}, "")
    writes.add(vault, {"id": "mem_b", "subject": "s", "summary": "b"}, "")
    assert {n.id for n in api.graph_around(vault, memory_id="mem_a").nodes} == {"mem_a", "mem_b"}
    assert {n.id for n in api.graph_around(vault, memory_id="mem_b").nodes} == {"mem_a", "mem_b"}
    assert len(api.graph_around(vault, subject="s").nodes) == 3
    assert len(reads) == 1
    writes.add(vault, {"id": "mem_c", "subject": "s", "summary": "c", "links": ["mem_a"]}, "")
    assert {n.id for n in api.graph_around(vault, memory_id="mem_a").nodes} == {"mem_a", "mem_b", "mem_c"}
    assert len(reads) == 2
    api.graph_around(vault, memory_id="mem_a", now="2030-01-01")      # another moment: computed for it
    assert len(reads) == 3


def test_memories_page_newest_first_with_filters_and_tags(vault):
    for k in range(7):
        writes.add(vault, {"id": f"mem_{k}", "subject": "a" if k % 2 else "b", "summary": f"m{k}",
                           "created": f"2026-11-0{k + 1}T09:00:00+00:00", "tags": ["#数据库"] if k < 3 else []}, "")
    page = api.browse(vault, limit=3)
    assert [r["id"] for r in page.rows] == ["mem_6", "mem_5", "mem_4"] and page.total == 7 and page.next_offset == 3
    last = api.browse(vault, offset=6, limit=3)
    assert [r["id"] for r in last.rows] == ["mem_0"] and last.next_offset is None and last.previous_offset == 3
    assert [r["id"] for r in api.browse(vault, subject="a").rows] == ["mem_5", "mem_3", "mem_1"]
    assert [r["id"] for r in api.browse(vault, tag="#数据库").rows] == ["mem_2", "mem_1", "mem_0"]
    with pytest.raises(UsageError):
        api.browse(vault, layer="L9")
    with pytest.raises(UsageError):
        api.browse(vault, colour="red")


def test_a_tag_is_found_however_the_file_writes_it(vault):
    """memrepo quotes and escapes a tag holding '"' or '\\'; a person's hand-written file may
    list tags in flow style or without indenting them: the tag filter finds each."""
    writes.add(vault, {"id": "mem_quoted", "summary": "q", "tags": ['say "hi"', "back\\slash"]}, "")
    folder = vault.root / "memories" / "L1" / "2026-11-01"
    folder.mkdir(parents=True)
    head = "---\nlayer: L1\nkind: event\nsubject: general\nstatus: active\nsource: user\n"
    (folder / "mem_hand.md").write_text(head + "id: mem_hand\nsummary: by hand\ncreated: 2026-11-01T09:00:00+00:00\n"
                                        'tags: [alpha, "#数据库"]\n---\nWritten by hand.\n', encoding="utf-8")
    (folder / "mem_flat.md").write_text(head + "id: mem_flat\nsummary: flat\ncreated: 2026-11-01T10:00:00+00:00\n"
                                        "tags:\n- alpha\n---\nWritten by hand too.\n", encoding="utf-8")
    git(vault.root, "add", "memories")
    git(vault.root, "commit", "-q", "-m", "hand-written memories")
    assert [r["id"] for r in api.browse(vault, tag='say "hi"').rows] == ["mem_quoted"]
    assert [r["id"] for r in api.browse(vault, tag="back\\slash").rows] == ["mem_quoted"]
    assert [r["id"] for r in api.browse(vault, tag="alpha").rows] == ["mem_flat", "mem_hand"]
    assert [r["id"] for r in api.browse(vault, tag="#数据库").rows] == ["mem_hand"]
    assert api.browse(vault, tag="alph").total == 0


def test_a_page_offset_past_any_vault_is_a_usage_error_not_a_crash(vault):
    writes.add(vault, {"id": "mem_1", "summary": "one"}, "")
    assert api.browse(vault, offset=10**6).rows == ()
    with pytest.raises(UsageError):
        api.browse(vault, offset=10**30)


def test_an_agent_scope_browses_that_agents_private_vault(vault):
    from memrepo.team import scopes
    scopes.add(vault, {"summary": "my private note", "scope": "private"}, "", agent="analyst")
    assert api.agents_with_private_memories(vault) == ["analyst"]
    page = api.browse(vault, agent="analyst")
    assert [r["summary"] for r in page.rows] == ["my private note"] and page.scope == "analyst"
    assert api.browse(vault).total == 0
    assert api.browse(vault, agent="nobody").total == 0


def test_the_last_distill_run_is_read_back_with_its_reasons(vault):
    assert api.last_distill(vault) is None
    lines = [json.dumps({"subject": "user", "summary": "User asked for the dark theme again",
                         "body": "Switched the editor to dark mode; the user prefers dark themes.",
                         "created": f"2026-11-{d}T09:00:00+00:00", "session": f"s-{d}"}) for d in (20, 22, 25)]
    (vault.root.parent / "days.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    api.import_jsonl(vault, vault.root.parent / "days.jsonl")
    api.distill(vault, now="2026-11-29")
    run = api.last_distill(vault)
    assert run is not None and run["candidates"] and run["candidates"][0]["why"]
    (vault.state_dir / "runs" / "distill-99999999T999999.json").write_text("{torn", encoding="utf-8")
    assert api.last_distill(vault)["proposal"] == run["proposal"]      # a damaged log is skipped
    assert git(vault.root, "status", "--porcelain") == ""


def test_a_memory_page_sees_mentions_added_after_it_was_first_shown(vault):
    """The memory files a long-running reader keeps follow main commit by commit."""
    from memrepo.oversight.main_files import main_files
    writes.add(vault, {"id": "mem_a", "subject": "s", "summary": "alpha"}, "")
    assert api.memory_view(vault, "mem_a").neighbours == ()
    writes.add(vault, {"id": "mem_b", "subject": "s", "summary": "beta", "links": ["mem_a"]}, "")
    writes.add(vault, {"id": "mem_c", "subject": "s", "summary": "gamma", "cites": ["mem_a"]}, "")
    view = api.memory_view(vault, "mem_a")
    assert {(n.id, n.relation) for n in view.neighbours} == {("mem_b", "mentions"), ("mem_c", "mentions")}
    assert [c.ref for c in view.cited_by] == ["mem_c"]
    files = main_files(vault)
    assert set(files) == {r["path"] for r in vault.list()}
    assert all(files[r["path"]] == git(vault.root, "cat-file", "blob", f"main:{r['path']}").encode() for r in vault.list())
