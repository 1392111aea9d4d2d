"""OpenClaw workspaces from outside: symlinks and bad bytes are refused by name, an export
into an existing workspace is checked whole before anything is written and keeps what it
replaces, and a round trip keeps order, front matter, dates and ids."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memrepo import api
from memrepo.errors import MemrepoError

MEMORY_MD = """# Memory

## Gateway
- Always check the gateway config before a network change <!-- importance: 9 -->
- The gateway runs on port 8443

## Style
- Zebra entries come before apple entries in this section
- Apple entries come after zebra entries
"""
USER_MD = """# User

## Directives
- Call me Lin <!-- observed: 2026-07-27 | status: active -->
- Prefer metric units
"""
DAY = """---
title: Payments day
tags: [payments, incident]
---
# 2026-11-20

- Morning: payments API timed out at 09:10
- Noon: raised the connection pool to 50
- Evening: incident closed, p95 back under 200 ms
"""


def workspace(root: Path) -> Path:
    (root / "memory").mkdir(parents=True)
    (root / "MEMORY.md").write_text(MEMORY_MD, encoding="utf-8")
    (root / "USER.md").write_text(USER_MD, encoding="utf-8")
    (root / "memory" / "2026-11-20.md").write_text(DAY, encoding="utf-8")
    return root


def memrepo(vault, *args):
    env = {**os.environ, "MEMREPO_VAULT": str(vault.root)}
    return subprocess.run([sys.executable, "-m", "memrepo", *args], capture_output=True, text=True, env=env, timeout=60)


# ---------------------------------------------------------------- import: symlinks and bytes

@pytest.mark.parametrize("where", ["memory/2026-11-30.md", "MEMORY.md", "USER.md", "memory/imports/codex/notes.md"])
def test_import_refuses_a_symlink_and_names_it(vault, tmp_path, where):
    ws = workspace(tmp_path / "ws")
    secret = tmp_path / "outside" / "passwd"
    secret.parent.mkdir()
    secret.write_text("- root:x:0:0:root:/root:/bin/bash\n", encoding="utf-8")
    link = ws / where
    link.parent.mkdir(parents=True, exist_ok=True)
    link.unlink(missing_ok=True)
    link.symlink_to(secret)
    head = vault.head()
    with pytest.raises(MemrepoError) as e:
        api.import_openclaw(vault, ws)
    assert where in str(e.value) and "symlink" in str(e.value)
    assert vault.head() == head
    assert all("root:x" not in r["summary"] for r in vault.list())
    p = memrepo(vault, "import", "--from", "openclaw", str(ws))
    assert p.returncode != 0 and where in p.stderr and "Traceback" not in p.stderr


def test_import_refuses_a_symlinked_memory_folder(vault, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "MEMORY.md").write_text(MEMORY_MD, encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "2026-11-30.md").write_text("- from outside the workspace\n", encoding="utf-8")
    (ws / "memory").symlink_to(elsewhere)
    with pytest.raises(MemrepoError) as e:
        api.import_openclaw(vault, ws)
    assert "memory" in str(e.value) and "symlink" in str(e.value)
    assert all("outside the workspace" not in r["summary"] for r in vault.list())


def test_import_of_invalid_utf8_names_the_file(vault, tmp_path):
    ws = workspace(tmp_path / "ws")
    (ws / "MEMORY.md").write_bytes(b"## Notes\n- caf\xe9 au lait\n- \xff\xfe broken\n")
    with pytest.raises(MemrepoError) as e:
        api.import_openclaw(vault, ws)
    assert "MEMORY.md" in str(e.value) and "UTF-8" in str(e.value)
    p = memrepo(vault, "import", "--from", "openclaw", str(ws))
    assert p.returncode != 0 and "MEMORY.md" in p.stderr and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) <= 2


@pytest.mark.parametrize("where", ["memory/2026-11-30.md", "MEMORY.md", "memory/imports/codex/notes.md"])
def test_import_refuses_a_fifo_at_once(vault, tmp_path, where):
    """A named pipe in a workspace would block the import for ever (opening it waits for a writer)."""
    ws = workspace(tmp_path / "ws")
    (ws / where).parent.mkdir(parents=True, exist_ok=True)
    (ws / where).unlink(missing_ok=True)
    os.mkfifo(ws / where)
    p = memrepo(vault, "import", "--from", "openclaw", str(ws))
    assert p.returncode == 5 and where in p.stderr and "regular file" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


def test_import_refuses_an_enormous_file_without_reading_it(vault, tmp_path):
    ws = workspace(tmp_path / "ws")
    with open(ws / "memory" / "2026-11-30.md", "wb") as fh:
        fh.truncate(8 << 30)  # sparse: 8 GiB that would all be read into memory
    head = vault.head()
    p = memrepo(vault, "import", "--from", "openclaw", str(ws))
    assert p.returncode == 5 and "memory/2026-11-30.md" in p.stderr and "MiB" in p.stderr, p.stderr
    assert vault.head() == head


# ---------------------------------------------------------------- export: check first, keep a backup

def test_export_into_a_workspace_with_a_symlink_writes_nothing(vault, tmp_path):
    api.import_openclaw(vault, workspace(tmp_path / "src"))
    target = tmp_path / "target"
    (target / "memory").mkdir(parents=True)
    (target / "MEMORY.md").write_text("# Memory\n\n## My own heading\n- hand-written, not from memrepo\n", encoding="utf-8")
    (target / "USER.md").write_text("# User\n- my own user note\n", encoding="utf-8")
    outside = tmp_path / "outside.md"
    outside.write_text("outside\n", encoding="utf-8")
    (target / "memory" / "2026-11-20.md").symlink_to(outside)
    before = {p: p.read_bytes() for p in (target / "MEMORY.md", target / "USER.md", outside)}
    with pytest.raises(MemrepoError) as e:
        api.export_openclaw(vault, target)
    assert "memory/2026-11-20.md" in str(e.value) and "symlink" in str(e.value)
    assert {p: p.read_bytes() for p in before} == before
    p = memrepo(vault, "export", "--to", "openclaw", str(target))
    assert p.returncode != 0 and "Traceback" not in p.stderr
    assert {p: p.read_bytes() for p in before} == before


def test_export_keeps_what_it_replaces(vault, tmp_path):
    api.import_openclaw(vault, workspace(tmp_path / "src"))
    target = tmp_path / "target"
    target.mkdir()
    mine = "# Memory\n\n## My own heading\n- hand-written, not from memrepo\n"
    (target / "MEMORY.md").write_text(mine, encoding="utf-8")
    r = api.export_openclaw(vault, target)
    assert r.backup is not None
    kept = Path(r.backup) / "MEMORY.md"
    assert kept.read_text(encoding="utf-8") == mine
    assert "My own heading" not in (target / "MEMORY.md").read_text(encoding="utf-8")
    # the backup is not read back as memory by an import of the workspace
    other = api.init(tmp_path / "v2")
    api.import_openclaw(other, target)
    assert all("hand-written" not in row["summary"] for row in other.list())


# ---------------------------------------------------------------- round trip keeps structure

def test_round_trip_keeps_order_front_matter_dates_and_ids(vault, tmp_path):
    api.import_openclaw(vault, workspace(tmp_path / "src"))
    assert all("title:" not in r["summary"] and "tags:" not in r["summary"] for r in vault.list())
    morning = next(r for r in vault.list() if r["summary"].startswith("Morning"))
    assert set(vault.get(morning["id"]).meta["tags"]) >= {"payments", "incident"}
    out = tmp_path / "out"
    api.export_openclaw(vault, out)
    day = (out / "memory" / "2026-11-20.md").read_text(encoding="utf-8")
    assert day.index("Morning") < day.index("Noon") < day.index("Evening")
    assert day.startswith("---\n") and "title: Payments day" in day
    memory_md = (out / "MEMORY.md").read_text(encoding="utf-8")
    assert memory_md.index("Zebra") < memory_md.index("Apple")
    user_md = (out / "USER.md").read_text(encoding="utf-8")
    metric = next(line for line in user_md.splitlines() if "Prefer metric units" in line)
    assert "observed:" not in metric  # no date was given: none is invented
    assert "observed: 2026-07-27" in user_md
    fresh = api.init(tmp_path / "fresh")
    api.import_openclaw(fresh, out)
    ids = lambda v: {r["id"] for r in v.list(status="active")}  # noqa: E731
    assert ids(fresh) == ids(vault)
    again = tmp_path / "again"
    api.export_openclaw(fresh, again)
    for name in ("MEMORY.md", "USER.md", "memory/2026-11-20.md"):
        assert (again / name).read_text(encoding="utf-8") == (out / name).read_text(encoding="utf-8"), name
    json.dumps(api.validate_tree(fresh) == [])
    assert api.validate_tree(fresh) == []
