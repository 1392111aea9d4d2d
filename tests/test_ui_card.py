"""The card as data and as markdown (``memrepo review N --markdown``), the forge compare URL
(printed after a proposal is pushed), and bulk apply/reject."""
from __future__ import annotations

import json
import subprocess

import pytest
from conftest import cli, git

from memrepo import api
from memrepo.agents import evidence
from memrepo.errors import UsageError
from memrepo.review import writes


@pytest.mark.parametrize("url, kind, expected", [
    ("https://github.com/acme/memory.git", None, "https://github.com/acme/memory/compare/main...proposal/prop_x"),
    ("git@github.com:acme/memory.git", None, "https://github.com/acme/memory/compare/main...proposal/prop_x"),
    ("ssh://git@github.com/acme/memory", None, "https://github.com/acme/memory/compare/main...proposal/prop_x"),
    ("https://gitlab.com/team/sub/memory.git", None,
     "https://gitlab.com/team/sub/memory/-/merge_requests/new?merge_request%5Bsource_branch%5D=proposal%2Fprop_x"
     "&merge_request%5Btarget_branch%5D=main"),
    ("git@codeberg.org:me/memory.git", None, "https://codeberg.org/me/memory/compare/main...proposal/prop_x"),
    ("https://gitea.example.org/me/memory.git", None, "https://gitea.example.org/me/memory/compare/main...proposal/prop_x"),
    ("https://git.example.org/me/memory.git", "gitlab",
     "https://git.example.org/me/memory/-/merge_requests/new?merge_request%5Bsource_branch%5D=proposal%2Fprop_x"
     "&merge_request%5Btarget_branch%5D=main"),
    ("https://git.example.org/me/memory.git", None, None),     # unknown kind of host
    ("/srv/git/memory.git", None, None),                       # a local path
    ("../team.git", None, None),
])
def test_the_compare_link_is_built_from_the_remote_url(url, kind, expected):
    assert api.compare_link(url, branch="proposal/prop_x", kind=kind) == expected


def high_risk(vault, memory_id="mem_new", **extra):
    writes.add(vault, {"id": "mem_old", "subject": "proj", "fact": "release.auto_publish", "layer": "L2",
                       "kind": "state", "summary": "允许自动发布", "evidence": ["docs/old.md#L1"]}, "允许自动发布。")
    return writes.add(vault, {"id": memory_id, "subject": "proj", "fact": "release.auto_publish", "layer": "L2",
                              "kind": "state", "summary": "禁止自动发布", "author": "agent-7", **extra},
                      "当前阶段禁止自动发布。")


def test_the_card_as_data_resolves_a_pruned_tool_result_to_its_text(vault):
    [saved], _commit = evidence.save_evidence(vault, ["pytest: 3 failed, 120 passed\nFAILED test_release"])
    r = high_risk(vault, evidence=[saved.pointer, "mem_old", "https://ci.example.org/run/7", "docs/release.md#L10"])
    view = api.review_view(vault, r.proposal)
    [entry] = view.entries
    assert entry.author == "agent-7" and entry.supersedes["id"] == "mem_old"
    assert entry.supersedes["summary"] == "允许自动发布"
    kinds = {i.pointer: (i.kind, i.text) for i in entry.evidence}
    assert kinds[saved.pointer] == ("stored", "pytest: 3 failed, 120 passed\nFAILED test_release")
    assert kinds["mem_old"] == ("memory", "允许自动发布")
    assert kinds["https://ci.example.org/run/7"][0] == "url" and kinds["docs/release.md#L10"][0] == "pointer"
    assert view.rollback_point == view.proposal.base and view.compare_url is None   # no remote


def test_review_markdown_prints_the_card_and_the_field_diff(vault):
    r = high_risk(vault, evidence=["docs/release.md#L10-L20"], affects=["release pipeline | waits"])
    done = cli(vault.root, "review", r.proposal, "--markdown")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert f"## memrepo proposal `{r.proposal}` (open)" in text
    assert "| 2. Supersedes | `mem_old`: 允许自动发布" in text
    assert "| summary | 允许自动发布 | 禁止自动发布 |" in text
    assert "<del>允许</del><ins>当前阶段禁止</ins>自动发布。" in text
    assert "release pipeline \\| waits" in text          # a value's | does not break the table
    assert f"memrepo apply {r.proposal}" in text


def test_a_value_cannot_inject_markup_into_the_markdown_card(vault):
    r = high_risk(vault, affects=["<img src=x onerror=alert(1)> [click](javascript:alert(1))"])
    text = api.review_markdown(vault, r.proposal)
    assert "<img" not in text and "&lt;img src=x onerror=alert(1)&gt;" in text
    assert "\\[click\\]" in text


def test_a_value_shown_as_code_cannot_inject_markup_either(vault):
    """A subject, fact or evidence pointer is shown as code: a backtick in it must not end the
    code span and let the rest through as HTML or a link."""
    r = writes.add(vault, {"id": "mem_a", "subject": "x` <img src=x onerror=alert(1)> [click](https://evil.example) `",
                           "fact": "f`<b>F</b>", "kind": "constraint", "summary": "s", "evidence": ["notes` <b>E</b> `"]}, "body")
    text = api.review_markdown(vault, r.proposal)
    assert "<img" not in text and "<b>" not in text and "[click](" not in text
    assert "| evidence | — |" in text                   # a list added where there was none: no "None"


def test_the_compare_url_is_printed_after_a_proposal_is_pushed(vault, tmp_path):
    server = tmp_path / "server.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(server)], check=True)
    git(vault.root, "remote", "add", "origin", str(server))
    git(vault.root, "push", "-q", "origin", "main")
    r = high_risk(vault)
    local = cli(vault.root, "proposals", "push", r.proposal, "--json")
    assert local.returncode == 0 and json.loads(local.stdout)["compare_url"] is None   # a local path: no forge page
    git(vault.root, "config", "remote.origin.pushurl", str(server))
    git(vault.root, "config", "remote.origin.url", "git@github.com:acme/memory.git")
    # the push goes to pushurl (the bare repository); the page is built from url
    r2 = writes.add(vault, {"id": "mem_other", "subject": "proj", "fact": "release.channel", "layer": "L2",
                            "kind": "constraint", "summary": "stable only"}, "")
    done = cli(vault.root, "proposals", "push", r2.proposal)
    assert done.returncode == 0, done.stderr
    assert f"https://github.com/acme/memory/compare/main...proposal/{r2.proposal}" in done.stdout


def test_bulk_apply_goes_on_past_a_refusal_and_bulk_reject_needs_a_reason(vault):
    a = writes.add(vault, {"id": "mem_a", "subject": "s", "fact": "a", "kind": "constraint", "summary": "a"}, "")
    b = writes.add(vault, {"id": "mem_b", "subject": "s", "fact": "b", "kind": "constraint", "summary": "b"}, "")
    c = writes.add(vault, {"id": "mem_c", "subject": "s", "fact": "c", "kind": "constraint", "summary": "c"}, "")
    api.reject(vault, b.proposal, why="wrong")
    done = api.apply_many(vault, [a.proposal, b.proposal], reviewer="Ann Reviewer")
    assert [o.ok for o in done] == [True, False]
    assert done[1].code == 4 and "already rejected" in done[1].error
    assert "Memrepo-Reviewer: Ann Reviewer" in git(vault.root, "log", "-1", "--format=%B", done[0].commit)
    with pytest.raises(UsageError):
        api.reject_many(vault, [c.proposal], why="  ")
    [rej] = api.reject_many(vault, [c.proposal], why="duplicate")
    assert rej.ok and api.get_proposal(vault, c.proposal).status == "rejected"


def test_an_approval_carries_the_reviewers_reason_one_or_in_bulk(vault):
    """The approval card has a reason field, as rejection does (optional here): it is recorded
    in each apply commit and listed with the outcome, for one proposal and for a bulk approve."""
    a, b, c = (writes.add(vault, {"id": f"mem_{k}", "subject": "s", "fact": k, "kind": "constraint", "summary": k}, "")
               for k in "abc")
    commit = api.apply(vault, a.proposal, why="checked  with\nthe release team")
    assert "Memrepo-Why: checked with the release team" in git(vault.root, "log", "-1", "--format=%B", commit)
    done = api.apply_many(vault, [b.proposal, c.proposal], why="同意：两条都对")
    assert all(o.ok for o in done)
    closed = {p.id: p.outcome for p in api.list_proposals(vault, include_closed=True)}
    assert closed[a.proposal]["reason"] == "checked with the release team"
    assert closed[b.proposal]["reason"] == closed[c.proposal]["reason"] == "同意：两条都对"
    d = writes.add(vault, {"id": "mem_d", "subject": "s", "fact": "d", "kind": "constraint", "summary": "d"}, "")
    plain = api.apply(vault, d.proposal)
    assert "Memrepo-Why" not in git(vault.root, "log", "-1", "--format=%B", plain)   # no reason, no trailer


def test_apply_why_from_the_command_line(vault):
    r = writes.add(vault, {"id": "mem_w", "subject": "s", "fact": "w", "kind": "constraint", "summary": "w"}, "")
    done = cli(vault.root, "apply", r.proposal, "--why", "matches the runbook")
    assert done.returncode == 0, done.stderr
    listed = cli(vault.root, "proposals", "--all")
    assert "matches the runbook" in listed.stdout
