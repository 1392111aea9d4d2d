"""The lifecycle commands (memrepo/cli/commands/lifecycle.py) as a person reads them."""
from __future__ import annotations

import json

from memrepo.cli.app import main
from memrepo.review import writes as memories


def test_nightly_prints_a_short_summary_and_json_on_request(vault, capsys):
    assert main(["--vault", str(vault.root), "nightly"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("nightly run at ") and "distill: nothing to distill" in out and "{" not in out
    assert main(["--vault", str(vault.root), "nightly", "--json"]) == 0
    assert "changed" in json.loads(capsys.readouterr().out)


def test_cleanup_dry_run_says_would(vault, capsys):
    memories.add(vault, {"subject": "s", "summary": "temporary", "expires": "2026-01-02T00:00:00+00:00"}, "b")
    assert main(["--vault", str(vault.root), "cleanup", "--dry-run", "--now", "2027-01-01"]) == 0
    assert ": would archive (" in capsys.readouterr().out
