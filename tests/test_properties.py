"""Random sequences of add / propose / apply / reject / rollback / hand ``git revert`` on a real
repository keep the vault's invariants after every step."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from conftest import git, person_env
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from memrepo import api
from memrepo.errors import MemrepoError
from memrepo.review import proposals, provenance, validate
from memrepo.review import writes as memories

FACTS = st.sampled_from(["db.pool", "ui.theme", None])
KINDS = st.sampled_from(["knowledge", "preference", "constraint"])
SOURCES = st.sampled_from(["user", "user", "model-inference"])



class VaultMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="memrepo-prop-"))
        self.vault = api.init(self.tmp / "v")
        self.n = 0

    def teardown(self):
        self.vault.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -------------------------------------------------------------- helpers

    def snapshot(self):
        root = self.vault.root
        return (git(root, "rev-parse", "main"), git(root, "status", "--porcelain"),
                git(root, "for-each-ref", "--format=%(refname) %(objectname)"))

    def open_ids(self) -> list[str]:
        return [p.id for p in proposals.list_proposals(self.vault)]

    def refused_cleanly(self, action) -> None:
        """Run a review action: it succeeds, or refuses with a memrepo error and changes nothing."""
        before = self.snapshot()
        try:
            action()
        except MemrepoError:
            assert self.snapshot() == before

    # -------------------------------------------------------------- rules

    @rule(fact=FACTS, kind=KINDS, source=SOURCES)
    def add(self, fact, kind, source):
        self.n += 1
        fields = {"id": f"mem_{self.n}", "subject": "proj", "kind": kind, "layer": "L2", "source": source,
                  "summary": f"version {self.n}"}
        if fact:
            fields["fact"] = fact
        result = memories.add(self.vault, fields, f"body {self.n}")
        assert (result.commit is None) == (result.proposal is not None)

    @precondition(lambda self: self.n > 0)
    @rule(pick=st.integers(0, 20), mode=st.sampled_from(["overwrite", "overwrite", "append"]))
    def apply(self, pick, mode):
        ids = self.open_ids()
        if ids:
            self.refused_cleanly(lambda: proposals.apply(self.vault, ids[pick % len(ids)], mode=mode))

    @precondition(lambda self: self.n > 0)
    @rule(pick=st.integers(0, 20))
    def reject(self, pick):
        ids = self.open_ids()
        if ids:
            proposals.reject(self.vault, ids[pick % len(ids)], why="random rejection")

    @precondition(lambda self: self.n > 0)
    @rule(pick=st.integers(1, 40))
    def rollback(self, pick):
        self.refused_cleanly(lambda: provenance.rollback(self.vault, f"mem_{1 + pick % self.n}"))

    @precondition(lambda self: self.n > 0)
    @rule(pick=st.integers(0, 20))
    def git_revert(self, pick):
        root = self.vault.root
        # The changes that took effect: add, import and apply commits (every applied change is
        # one commit, so a hand `git revert` of that commit leaves a valid vault).
        # Reverting a revert or a rollback re-activates an old version that git hooks never see:
        # see test_review.py::test_hand_revert_of_a_rollback_commit_is_not_checked.
        log = git(root, "log", "--first-parent", "--format=%H %s", "main").splitlines()
        commits = [line.split()[0] for line in log
                   if line.split(" ", 1)[1].startswith(("memrepo: add ", "memrepo: apply ", "memrepo: import "))]
        if not commits:
            return
        target = commits[pick % len(commits)]
        parents = git(root, "rev-list", "--parents", "-n", "1", target).split()[1:]
        args = ["-m", "1"] if len(parents) > 1 else []
        before = self.snapshot()
        proc = subprocess.run(["git", "-C", str(root), "revert", "--no-edit", *args, target],
                              capture_output=True, text=True, env=person_env())
        if proc.returncode != 0:  # conflicts with later changes: a person would abort
            subprocess.run(["git", "-C", str(root), "revert", "--abort"], capture_output=True, env=person_env())
            assert self.snapshot() == before

    # -------------------------------------------------------------- invariants

    @invariant()
    def vault_is_valid(self):
        problems = validate.validate_tree(self.vault)
        assert problems == [], [str(p) for p in problems]

    @invariant()
    def one_active_per_fact_and_supersedes_consistent(self):
        rows = {r["id"]: self.vault.get(r["id"]).meta for r in self.vault.list()}
        active = [(m["subject"], m["fact"]) for m in rows.values() if m["status"] == "active" and m.get("fact")]
        assert len(active) == len(set(active)), active
        for memory_id, m in rows.items():
            if m.get("supersedes") and m["status"] == "active":
                old = rows[m["supersedes"]]
                assert old["status"] == "superseded" and old["superseded_by"] == memory_id

    @invariant()
    def checkout_is_clean(self):
        assert git(self.vault.root, "status", "--porcelain") == ""


def test_random_review_sequences_keep_the_invariants():
    run_state_machine_as_test(VaultMachine, settings=settings(
        max_examples=12, stateful_step_count=12, deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]))
