"""``memrepo policy``: the review policy in force, its unreviewed changes, and a person accepting one.

The ``[risk]`` and ``[arbitration]`` keys of ``.memrepo/config.toml`` decide what goes to
review, so a change that lowers them is itself a high-risk change: until a person accepts it,
memrepo keeps the stricter value (:mod:`memrepo.store.policy` folds the file's history on main).
:func:`pending` names every key lowered without review and the commit that lowered it (what
``validate`` reports and ``sync`` says it brought); :func:`accept` is the review: it commits the
working tree's file when it changed and records that exact file under
``refs/memrepo/policy/<blob>`` with who accepted it and why. The record is a ref memrepo writes,
not text in a commit message, so a hand commit cannot claim it; ``sync`` carries records to
the other clones.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memrepo.config import CONFIG_PATH, Config, parse_policy_text, policy_weakenings, strictest
from memrepo.errors import Problem, UsageError
from memrepo.review.gate import Override
from memrepo.store import git
from memrepo.store import policy as store_policy
from memrepo.store.vault import Vault

ACTION = "policy"


@dataclass(frozen=True)
class Pending:
    """A key of the policy lowered without review: by ``commit`` (None: the working tree)."""
    key: str
    what: str
    commit: str | None
    author: str = ""
    subject: str = ""

    def problem(self) -> Problem:
        where = (f"lowered in {self.commit[:12]} ({self.subject!r}, {self.author})" if self.commit
                 else "lowered in the working tree (not committed)")
        undo = f" (or revert {self.commit[:12]})" if self.commit else ""
        return Problem(CONFIG_PATH, self.key, (
            f"{where} without review: {self.what}; memrepo keeps the reviewed value until a person accepts the "
            f"change with 'memrepo policy accept --why TEXT'{undo}"))

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "what": self.what, "commit": self.commit, "author": self.author, "subject": self.subject}


class Accepted(Override):
    """A lowered policy a person accepted (listed by ``validate`` as a note)."""

    def __str__(self) -> str:
        return f"{self.path}: review policy accepted in {self.commit[:12]} by {self.author}: {self.reason}"


@dataclass(frozen=True)
class Report:
    effective: Config          # the policy in force
    file: Config               # config.toml as written in the working tree
    pending: list[Pending]
    accepted: list[Accepted]

    def as_dict(self) -> dict[str, Any]:
        tables = ("risk", "arbitration")
        return {"effective": {t: self.effective.section(t) for t in tables},
                "file": {t: self.file.section(t) for t in tables},
                "pending": [p.as_dict() for p in self.pending],
                "accepted": [a.as_dict() for a in self.accepted]}


def report(vault: Vault) -> Report:
    """The policy in force, the file as written, what is lowered without review, and the acceptances."""
    return Report(vault.config, vault.raw_config(), pending(vault), acceptances(vault))


def pending(vault: Vault, *, since: str | None = None) -> list[Pending]:
    """Every key the policy file (on main, then in the working tree) lowers without a person's
    acceptance, with the commit that lowered it; ``since``: only those lowered after that commit."""
    head = vault.head()
    if head is None:
        return []
    records = store_policy.accepted(vault.root)
    changes = store_policy.history(vault.root, vault.main_ref)
    texts = git.read_blobs(vault.root, [b for _, b in changes if b != git.ZERO])
    in_force: Config | None = None
    lowered: dict[str, tuple[str | None, str]] = {}   # key -> (commit, what), while it stays lowered
    for commit, blob in changes:
        version = parse_policy_text(texts[blob].decode("utf-8", "replace")) if blob != git.ZERO else Config()
        if in_force is None or blob in records:
            in_force, lowered = version, {}
            continue
        now = dict((k, w) for k, w in policy_weakenings(in_force, version))
        lowered = {k: lowered.get(k, (commit, now[k])) for k in now}
        in_force = strictest(version, in_force)
    raw = _worktree(vault)
    if raw is not None and in_force is not None and raw[1] not in records and (not changes or raw[1] != changes[-1][1]):
        for key, what in policy_weakenings(in_force, raw[0]):
            lowered.setdefault(key, (None, what))
    if since is not None:
        fresh = {c for c in _commits_after(vault, since)}
        lowered = {k: v for k, v in lowered.items() if v[0] is None or v[0] in fresh}
    entries = git.commits(vault.root, [c for c, _ in lowered.values() if c])
    return [Pending(key, what, commit, entries[commit].author if commit else "", entries[commit].subject if commit else "")
            for key, (commit, what) in sorted(lowered.items())]


def _commits_after(vault: Vault, since: str) -> list[str]:
    return [e.commit for e in git.log(vault.root, f"{since}..{vault.main_ref}", extra=["--first-parent"])]


def _worktree(vault: Vault) -> tuple[Config, str] | None:
    path = vault.root / CONFIG_PATH
    if not path.is_file() or path.is_symlink():
        return None
    data = path.read_bytes()
    return parse_policy_text(data.decode("utf-8", "replace")), store_policy.blob_id(data)


def acceptances(vault: Vault) -> list[Accepted]:
    """Every record of a person accepting a policy file, oldest first."""
    refs = git.refs(vault.root, store_policy.RECORDS)
    entries = git.commits(vault.root, refs.values())
    from memrepo.review.proposals import trailers
    found = []
    for sha in refs.values():
        entry = entries[sha]
        t = trailers(entry.body)
        found.append(Accepted(CONFIG_PATH, "policy", sha, t.get("Memrepo-Reviewer", entry.author),
                              t.get("Memrepo-Why", entry.subject)))
    return sorted(found, key=lambda a: entries[a.commit].date)


@dataclass(frozen=True)
class AcceptResult:
    blob: str               # the config.toml accepted (its git object id)
    commit: str             # the commit on main holding it
    record: str             # refs/memrepo/policy/<blob>
    lowered: list[tuple[str, str]]

    def as_dict(self) -> dict[str, Any]:
        return {"blob": self.blob, "commit": self.commit, "record": self.record,
                "lowered": [{"key": k, "what": w} for k, w in self.lowered]}


def accept(vault: Vault, *, why: str, reviewer: str | None = None) -> AcceptResult:
    """A person accepts the policy file as it stands in the working tree: committed to main
    when it changed (one commit), recorded under ``refs/memrepo/policy/<blob>`` in the same ref
    transaction, with who and why. From then on it is the policy in force, here and, after
    ``sync``, on every clone."""
    if not why.strip():
        raise UsageError("say why the review policy changes (--why TEXT): reviewers and later readers see it")
    path = vault.root / CONFIG_PATH
    if path.is_symlink():
        raise UsageError(f"{CONFIG_PATH} is a symlink; replace it with the file itself")
    vault.raw_config()  # a file that does not load is not accepted (ConfigError names the key)
    data = path.read_bytes() if path.is_file() else b""
    blob = store_policy.blob_id(data)
    record = store_policy.RECORDS + blob
    reviewer = reviewer or git.identity(vault.root)[0]
    with vault.lock():
        vault.require_main_checkout()
        before = vault.config
        lowered = policy_weakenings(before, parse_policy_text(data.decode("utf-8", "replace")))
        if git.rev_parse(vault.root, record):
            raise UsageError(f"this {CONFIG_PATH} was accepted already ({record}); nothing changed")
        message = ("memrepo: accept the review policy"
                   + (f" ({', '.join(k for k, _ in lowered)} lowered)" if lowered else "")
                   + f"\n\n{why.strip()}\n\n"
                   + "".join(f"- {k}: {w}\n" for k, w in lowered) + ("\n" if lowered else "")
                   + f"Memrepo-Action: {ACTION}\nMemrepo-Reviewer: {reviewer}\nMemrepo-Why: {' '.join(why.split())}\n")
        committed = git.object_ids(vault.root, [f"{vault.main_ref}:{CONFIG_PATH}"])[f"{vault.main_ref}:{CONFIG_PATH}"]
        if committed != blob:
            result = vault.commit(files={CONFIG_PATH: data}, message=message, adopt=[CONFIG_PATH],
                                  also=[git.RefChange(record, git.NEW_COMMIT, None)])
            commit = result.commit
        else:
            commit = vault.head() or ""
            vault.commit(ref=record, parent=commit, message=message, reason="memrepo: accept the review policy")
        vault.refresh()
    return AcceptResult(blob, commit, record, lowered)


# The names memrepo.api gives them.
policy_report, accept_policy, pending_policy = report, accept, pending
