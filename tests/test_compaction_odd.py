"""Compaction summaries the template did not foresee: one holding a credential (nothing may
reach git, not even as evidence), one whose checkpoint section is a raw dump (kept as evidence
with a short checkpoint, not lost)."""
from __future__ import annotations

from conftest import cli, git
from test_claude_code_hooks import CHECKPOINT, SESSION, payload

KEY = "AKIAIOSFODNN7EXAMPLE"


def test_a_summary_with_a_credential_leaves_nothing_in_git(vault):
    """The checkpoint is refused for the credential; the whole summary must not have been
    committed as evidence first (it was, with the key, in a commit of its own)."""
    start = vault.head()
    for summary in (f"We rotated the deploy key {KEY} and fixed the login bug.",       # no template
                    f"# memrepo checkpoint\n## What\nRotated the key {KEY}\n## Next\nship"):
        p = cli(vault.root, "flush", "--hook", stdin=payload("PostCompact", trigger="auto", compact_summary=summary))
        assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1 and "credential" in p.stderr, p.stderr
        assert vault.head() == start, git(vault.root, "log", "--format=%s", f"{start}..main")
    assert KEY not in git(vault.root, "log", "-p", "--all")


def test_a_checkpoint_section_over_the_caps_is_kept_as_evidence_not_lost(vault):
    """A compactor that wrote pages under the template's headings: the checkpoint is the
    pointer form (the opening words, the whole summary as evidence), not nothing at all."""
    long = "# memrepo checkpoint\n" + CHECKPOINT.replace("## Why\n", "## Why\n" + "a reason that goes on. " * 200 + "\n")
    p = cli(vault.root, "flush", "--hook", "--json", stdin=payload("PostCompact", trigger="auto", compact_summary=long))
    assert p.returncode == 0 and '"written": 1' in p.stdout, p.stderr
    m = next(vault.get(r["id"]) for r in vault.list() if r["kind"] == "checkpoint")
    assert m.meta["session"] == SESSION and m.meta["evidence"][0].startswith("evidence:")
    assert cli(vault.root, "evidence", m.meta["evidence"][0]).stdout.strip() == long.strip()
