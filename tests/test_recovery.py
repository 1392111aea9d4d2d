"""A writer killed between moving main and updating the checkout: the next writer finishes it."""
from __future__ import annotations

import pytest
from conftest import git

from memrepo.review import proposals
from memrepo.review import writes as memories
from memrepo.store import secretscan
from memrepo.store.vault import Vault


class Killed(BaseException):
    """Stands in for the process dying (not an Exception: nothing may catch it)."""


def kill_before_checkout(monkeypatch):
    def boom(self, changes):
        raise Killed()
    monkeypatch.setattr(Vault, "_update_checkout", boom)


def test_killed_add_leaves_main_consistent_and_next_write_repairs_the_checkout(vault, monkeypatch):
    kill_before_checkout(monkeypatch)
    with pytest.raises(Killed):
        memories.add(vault, {"id": "mem_a", "subject": "s", "summary": "first"}, "")
    monkeypatch.undo()
    assert "mem_a.md" in git(vault.root, "ls-tree", "-r", "--name-only", "main")
    assert not (vault.root / vault.get("mem_a").path).exists()  # the half the kill skipped
    fresh = Vault(vault.root)
    memories.add(fresh, {"id": "mem_b", "subject": "s", "summary": "second"}, "")
    assert (vault.root / fresh.get("mem_a").path).exists()
    assert git(vault.root, "status", "--porcelain") == ""


def test_killed_apply_leaves_old_or_new_state_never_a_half_merge(vault, monkeypatch):
    memories.add(vault, {"id": "mem_old", "subject": "p", "fact": "release.auto", "summary": "manual"}, "")
    pending = memories.add(vault, {"id": "mem_new", "subject": "p", "fact": "release.auto", "summary": "auto"}, "")
    before = vault.head()
    kill_before_checkout(monkeypatch)
    with pytest.raises(Killed):
        proposals.apply(vault, pending.proposal)
    monkeypatch.undo()
    after = vault.head()
    assert after != before and git(vault.root, "rev-parse", f"{after}^1").strip() == before
    fresh = Vault(vault.root)
    assert fresh.recover() is True
    assert git(vault.root, "status", "--porcelain") == ""
    assert fresh.get("mem_new").meta["status"] == "active"
    assert fresh.get("mem_old").meta["status"] == "superseded"
    assert fresh.recover() is False


@pytest.mark.parametrize("prose", ["password: required", "secret: nothing to hide",
                                   "api_key: stored in 1Password", "the password reset flow"])
def test_prose_about_passwords_is_not_a_credential(prose):
    assert secretscan.scan(prose) == []


@pytest.mark.parametrize("leak", ["password=hunter22", "密码：abc12345", "PASSWORD=Tr0ub4dor",
                                  "password=correcthorsebatterystaple"])
def test_password_assignments_are_credentials(leak):
    assert [f.rule for f in secretscan.scan(leak)] == ["password-assignment"]
