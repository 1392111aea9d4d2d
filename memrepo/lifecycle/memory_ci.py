"""Memory CI: run the vault's recall checks on a version of the vault, and compare two.

Code has tests a change must pass; so does memory here. A recall check (``checks/*.yaml``,
:mod:`memrepo.store.recall_checks`) is a question and the memory it must find in the top N.
:func:`run_checks` answers every check on one version of the vault (a commit, a branch, or a
proposal *as it would be after apply*: its memories wait as ``pending_review`` on the branch
until then) and, given another version, on that one too, so a reviewer sees what a change does
to the agent's recall, not only what it changes. :func:`apply` refuses a proposal that makes a
passing check fail unless a person records why.

Each version is checked out in a throw-away clone that borrows the vault's git objects, with
its own index and vectors (copied from the vault's, then brought to that version the way a
search catches up, so only the changed memories are read and encoded): the checkout and
``.memrepo/index`` are never touched. The ranking is ``memrepo search``'s own, keywords and
vectors as the version's configuration has them, with no recall statistics: a check's answer
depends on the vault's files alone, so it is the same on every clone and in a forge's CI.
"""
from __future__ import annotations

import os
import shutil
import stat
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable

from memrepo.errors import Conflict, InvalidData, NotFound, UsageError
from memrepo.model import MEMORY_ROOTS
from memrepo.store import git
from memrepo.store.recall_checks import DEFAULT_FILE, DEFAULT_TOP, RecallCheck, append, load_rev, parse
from memrepo.store.vault import Vault, render_bytes

RANK_DEPTH = 20     # hits read per question: a rank up to this is shown, beyond it is "not found"
SCRATCH_AUTHOR = ("memrepo", "memrepo@localhost")


# ------------------------------------------------------------------ results

@dataclass(frozen=True)
class Outcome:
    """One check on one version of the vault."""

    passed: bool
    rank: int | None = None          # of the expected memory (None: not in the first RANK_DEPTH hits)
    found: str | None = None         # the memory that answered (by fact: the version active there)
    intruders: tuple[tuple[str, int], ...] = ()   # (must_not id, its rank) within the top
    state: str | None = None         # the expected memory's status there when it is not active ("missing")

    def text(self, *, expects: bool = True) -> str:
        """``2``, ``-`` (not found), with why when the expected memory is not active there, and
        any must-not memory found (a check with only ``must_not``: ``clear`` or those)."""
        intruders = ", ".join(f"{i} at {r}" for i, r in self.intruders)
        if not expects:
            return intruders or "clear"
        shown = str(self.rank) if self.rank is not None else "-"
        if self.state:
            shown += f" ({self.state})"
        return shown + (f"; {intruders}" if intruders else "")

    def as_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "rank": self.rank, "found": self.found,
                "must_not_found": [{"id": i, "rank": r} for i, r in self.intruders], "state": self.state}


@dataclass(frozen=True)
class CheckResult:
    check: RecallCheck
    after: Outcome
    before: Outcome | None = None

    @property
    def status(self) -> str:
        """pass, fail, regressed (passed before, fails after) or fixed (the reverse)."""
        if self.before is not None and self.before.passed != self.after.passed:
            return "fixed" if self.after.passed else "regressed"
        return "pass" if self.after.passed else "fail"

    def describe(self) -> str:
        """One line naming the check, what it expects and the ranks."""
        c = self.check
        expects = bool(c.expect_id or c.expect_fact)
        ranks = (f"{self.before.text(expects=expects)} -> " if self.before else "") + self.after.text(expects=expects)
        if not expects:
            return f"{c.name} {c.question!r} must not find {', '.join(c.must_not)} in the top {c.top}: {ranks}"
        return (f"{c.name} {c.question!r} expects {c.expect_label()} in the top {c.top}"
                + (f" (and not {', '.join(c.must_not)})" if c.must_not else "") + f": rank {ranks}")

    def as_dict(self) -> dict[str, Any]:
        return {"check": self.check.as_dict(), "status": self.status, "after": self.after.as_dict(),
                "before": self.before.as_dict() if self.before else None}


@dataclass(frozen=True)
class CheckRun:
    """Every check of a version of the vault, answered there and (with a base) on the base."""

    ref: str
    commit: str | None                    # None for a proposal: main with the proposal applied
    against: str | None = None
    against_commit: str | None = None
    proposal: str | None = None
    results: tuple[CheckResult, ...] = ()
    removed: tuple[RecallCheck, ...] = ()  # checks the base has and this version no longer has
    semantic: str = "off"
    skipped: str | None = None            # why nothing ran (a proposal that cannot be applied as is)

    @property
    def regressions(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == "regressed"]

    @property
    def failures(self) -> list[CheckResult]:
        return [r for r in self.results if not r.after.passed]

    @property
    def ok(self) -> bool:
        """Nothing regressed against the base; without a base, every check passes."""
        return not (self.regressions if self.against is not None else self.failures)

    def summary(self) -> str:
        """``38/40 → 40/40`` (or ``40/40`` without a base)."""
        total = len(self.results)
        after = f"{sum(r.after.passed for r in self.results)}/{total}"
        if self.against is None:
            return after
        return f"{sum(bool(r.before and r.before.passed) for r in self.results)}/{total} → {after}"

    def card_lines(self) -> list[str]:
        """The check delta as a review card shows it: the summary, then every check that
        regressed, was fixed or fails."""
        if self.skipped:
            return [f"Recall checks: not run: {self.skipped}"]
        if not self.results:
            return ["Recall checks: none in this vault (add one: memrepo check add QUESTION --expect ID)"]
        head = (f"Recall checks ({self.against} -> {self.label()}): " if self.against else
                f"Recall checks on {self.label()}: ") + self.summary()
        if self.regressions:
            head += f", {len(self.regressions)} REGRESSED"
        order = {"regressed": 0, "fail": 1, "fixed": 2}
        shown = sorted((r for r in self.results if r.status in order), key=lambda r: order[r.status])
        lines = [head] + [f"  {r.status.upper() if r.status == 'regressed' else r.status}: {r.describe()}" for r in shown]
        lines += [f"  removed: {c.name} {c.question!r} (only the base has it)" for c in self.removed]
        return lines

    def label(self) -> str:
        return f"proposal {self.proposal} applied" if self.proposal else self.ref

    def as_dict(self) -> dict[str, Any]:
        return {"ref": self.ref, "commit": self.commit, "against": self.against, "against_commit": self.against_commit,
                "proposal": self.proposal, "ok": self.ok, "summary": self.summary(), "total": len(self.results),
                "passed": sum(r.after.passed for r in self.results),
                "passed_before": sum(bool(r.before and r.before.passed) for r in self.results) if self.against else None,
                "regressions": [r.check.name for r in self.regressions], "semantic": self.semantic,
                "checks": [r.as_dict() for r in self.results], "removed": [c.as_dict() for c in self.removed],
                **({"skipped": self.skipped} if self.skipped else {})}


# ------------------------------------------------------------------ versions of the vault

@dataclass(frozen=True)
class _Version:
    """A version of the vault to check: a commit, or main with a proposal's changes on top."""

    label: str
    commit: str                                   # the commit itself, or main's tip under the changes
    changes: dict[str, bytes | None] = field(default_factory=dict)
    proposal: str | None = None

    def checks(self, root: Path) -> list[RecallCheck]:
        """Its checks, read from git (no checkout needed); a broken file stops the run."""
        from memrepo.store.recall_checks import is_check_file
        found, problems = load_rev(root, self.commit)
        if self.changes:
            touched = {p for p in self.changes if is_check_file(p)}
            found = [c for c in found if c.file not in touched]
            for path in sorted(touched):
                data = self.changes[path]
                if data is not None:
                    more, bad = parse(path, data)
                    found, problems = found + more, problems + bad
        if problems:
            raise InvalidData(problems, f"the recall checks of {self.label} cannot be read; fix the files (nothing was run)")
        return found


def _version(vault: Vault, ref: str, *, mode: str = "overwrite", only: Iterable[str] | None = None) -> _Version:
    """The version ``ref`` names: a proposal (its id, a memory id it carries, or its branch)
    as main would be after applying it, else any commit git can name. A proposal's id wins
    over a branch or tag of the same name (a person's copy of the proposal branch would
    otherwise be checked as a plain commit, with no base: apply would see no regression);
    ``refs/heads/NAME`` and ``refs/tags/NAME`` still name the ref itself."""
    from memrepo.review import proposal_files, proposals
    branch = ref.removeprefix("refs/heads/")
    pid = branch.removeprefix(proposals.BRANCH_PREFIX) if branch.startswith(proposals.BRANCH_PREFIX) else None
    if pid is None and git.rev_parse(vault.root, f"refs/heads/{proposals.BRANCH_PREFIX}{ref}") is not None:
        pid = ref
    if pid is None:
        sha = git.rev_parse(vault.root, ref)
        if sha is not None:
            return _Version(ref, sha)
    try:
        p = proposals.get(vault, pid or ref)
    except NotFound:
        raise NotFound(f"{ref!r} is no commit, branch or proposal; give a git revision (HEAD, main, origin/main, "
                       f"a commit id) or a proposal id ('memrepo proposals' lists them)") from None
    if p.status != "open":
        raise Conflict(f"proposal {p.id} is already {p.status}; run the checks on a commit instead (--ref main)")
    main = vault.head()
    if main is None:
        raise NotFound(f"{vault.main_branch} has no commit yet")
    writes = proposals.planned_writes(vault, p, mode=mode, only=only)
    changes: dict[str, bytes | None] = {m.path: render_bytes(m) for m in writes}
    changes.update({path: None for path in proposals.planned_deletes(vault, p, only=only)})
    changes.update(proposal_files.planned(vault, p))
    return _Version(f"proposal {p.id}", main, changes, p.id)


# ------------------------------------------------------------------ running

def run_checks(vault: Vault, ref: str = "HEAD", *, against: str | None = None, mode: str = "overwrite",
               only: Iterable[str] | None = None, select: Iterable[str] | None = None) -> CheckRun:
    """Every recall check of ``ref`` answered on ``ref`` and, with ``against``, on that version
    too. A proposal is checked as it would be after apply (``mode``/``only`` as ``apply``
    takes them) and against main unless told otherwise. The checks are the ones ``ref`` holds
    (``select``: only those of these names); those only ``against`` holds are listed as removed."""
    after = _version(vault, ref, mode=mode, only=only)
    base_ref = against if against is not None else (vault.main_branch if after.proposal else None)
    before = _version(vault, base_ref) if base_ref is not None else None
    every = after.checks(vault.root)
    names = None if select is None else set(select)
    checks = [c for c in every if names is None or c.name in names]
    keys = {c.key for c in every}
    removed = tuple(c for c in before.checks(vault.root) if c.key not in keys) if before else ()
    run = CheckRun(ref=ref, commit=None if after.changes else after.commit, against=base_ref,
                   against_commit=before.commit if before else None, proposal=after.proposal, removed=removed)
    if not checks:
        return run
    parent = _scratch_parent(vault)
    try:
        outcomes_before, outcomes_after, semantic = _answer_all(vault, parent, before, after, checks)
    except Exception:   # git, the index, SQLite or numpy out of room: each fails its own way
        if parent is None:
            raise
        # the memory filesystem is a speed-up only: filled up since its room was checked, the disk
        # takes the run (a failure that is not about room fails there again, as it would have)
        outcomes_before, outcomes_after, semantic = _answer_all(vault, None, before, after, checks)
    results = tuple(CheckResult(c, a, b) for c, a, b in zip(checks, outcomes_after, outcomes_before))
    return replace(run, results=results, semantic=semantic)


def _answer_all(vault: Vault, parent: str | None, before: _Version | None, after: _Version,
                checks: list[RecallCheck]) -> tuple[list[Outcome | None], list[Outcome], str]:
    """Each check answered on the base (None without one) and on the version, in one clone under ``parent``."""
    with _Scratch(vault, parent) as scratch:
        outcomes_before: list[Outcome | None] = [*scratch.answer(before, checks)[0]] if before else [None] * len(checks)
        outcomes_after, semantic = scratch.answer(after, checks)
    return outcomes_before, outcomes_after, semantic


def proposal_checks(vault: Vault, ref: str, *, mode: str = "overwrite", only: Iterable[str] | None = None) -> CheckRun:
    """The check delta of an open proposal (main now -> main after applying it), for its review
    card; a proposal that cannot be applied as it stands (stale, closed) gives a run that says
    why it was skipped instead of raising."""
    try:
        return run_checks(vault, ref, mode=mode, only=only)
    except Conflict as e:
        return CheckRun(ref=ref, commit=None, skipped=str(e))


def apply(vault: Vault, ref: str, *, mode: str = "overwrite", reviewer: str | None = None,
          only: Iterable[str] | None = None, accept_regression: str | None = None, why: str = "") -> str:
    """``memrepo apply``: the recall checks first, then the merge. A proposal that makes a check
    fail which passes on main is refused (Conflict, naming the checks) unless
    ``accept_regression`` says why; the reason and the checks are then recorded as trailers of
    the apply commit, and ``memrepo validate`` lists them. Runs under the vault lock, so main
    cannot move between the checks and the merge."""
    from memrepo.review import proposals
    if accept_regression is not None and not accept_regression.strip():
        raise UsageError("--accept-regression needs a reason: it is recorded in the apply commit and listed by 'memrepo validate'")
    only = list(only) if only is not None else None      # empty: nothing chosen, which proposals.apply refuses
    vault.require_main_checkout()
    with vault.lock():
        proposal = proposals.get(vault, ref)
        trailers: dict[str, str] = {}
        if proposal.status == "open" and only != [] and not set(only or ()) - set(proposal.ids):
            run = run_checks(vault, proposal.id, mode=mode, only=only)
            if run.regressions and accept_regression is None:
                raise Conflict(f"proposal {proposal.id} would make {len(run.regressions)} recall check(s) fail that pass "
                               f"on {vault.main_branch} ({run.summary()}): "
                               + "; ".join(r.describe() for r in run.regressions)
                               + f". Nothing was applied; see 'memrepo review {proposal.id}', or apply anyway with "
                               "--accept-regression \"why\" (recorded in the apply commit)")
            if run.regressions:
                trailers = {"Memrepo-Accept-Regression": accept_regression or "",
                            "Memrepo-Regressed": " ".join(regressed_name(r.check) for r in run.regressions)}
        return proposals.apply(vault, proposal.id, mode=mode, reviewer=reviewer, only=only, extra_trailers=trailers, why=why)


def apply_many(vault: Vault, ids: Iterable[str], *, mode: str = "overwrite", reviewer: str | None = None,
               only: Iterable[str] | None = None, accept_regression: str | None = None, why: str = "") -> list:
    """Several proposals applied in turn (a person's bulk approve), each through :func:`apply`:
    one whose recall checks regress is refused and stays open, the others go ahead."""
    from memrepo.review import bulk

    def checked(v: Vault, pid: str, **options: Any) -> str:
        return apply(v, pid, accept_regression=accept_regression, **options)
    return bulk.apply_many(vault, ids, mode=mode, reviewer=reviewer, only=only, why=why, apply=checked)


def regressed_name(check: RecallCheck) -> str:
    """How the apply commit names a check it let regress: ``file#id`` or ``file#Lline``."""
    return f"{check.file}#{check.id}" if check.id else f"{check.file}#L{check.line}"


# ------------------------------------------------------------------ writing and listing checks

@dataclass(frozen=True)
class AddedCheck:
    check: RecallCheck
    commit: str
    run: CheckRun          # the new check answered on main as it now stands

    def as_dict(self) -> dict[str, Any]:
        result = self.run.results[0] if self.run.results else None
        return {**self.check.as_dict(), "commit": self.commit, "passes": bool(result and result.after.passed),
                "rank": result.after.rank if result else None, "semantic": self.run.semantic}


def add_check(vault: Vault, question: str, *, expect: str | None = None, top: int = DEFAULT_TOP, by_fact: bool = False,
              must_not: Iterable[str] = (), intent: str | None = None, check_id: str | None = None,
              why: str | None = None, file: str = DEFAULT_FILE) -> AddedCheck:
    """``memrepo check add``: append one check to a checks file on main (one commit; the file's
    comments stay), then answer it on main, so the person sees at once whether it passes.
    ``by_fact`` expects the memory's (subject, fact) instead of its id: the check then follows
    the fact through supersedes."""
    check = _new_check(vault, question, expect=expect, top=top, by_fact=by_fact, must_not=must_not, intent=intent,
                       check_id=check_id, why=why, file=file)
    vault.require_main_checkout()
    with vault.lock():
        main = vault.head()
        existing = load_rev(vault.root, main)[0] if main else []
        clash = next((c for c in existing if c.id == check.id), None)
        if clash is not None:
            raise Conflict(f"a check with id {check.id!r} already exists ({clash.file}:{clash.line}); pick another --id")
        old = git.read_blob(vault.root, f"{main}:{file}").decode("utf-8") if main and git.exists(vault.root, f"{main}:{file}") else None
        text = append(old, file, [check])
        message = (f"memrepo: check add {check.id}: {question}"[:100] + "\n\n"
                   f"Recall check: {question!r} must find {check.expect_label()} in the top {check.top}.\n\n"
                   f"Memrepo-Action: check-add\nMemrepo-Check: {check.id}\n")
        commit = vault.commit(files={file: text.encode("utf-8")}, message=message).commit
    return AddedCheck(check, commit, run_checks(vault, vault.main_branch, select=[check.name]))


def _new_check(vault: Vault, question: str, *, expect: str | None, top: int, by_fact: bool, must_not: Iterable[str],
               intent: str | None, check_id: str | None, why: str | None, file: str) -> RecallCheck:
    from memrepo.model import INTENTS, check_choice, is_valid_id, new_id
    from memrepo.store.recall_checks import is_check_file
    must_not = tuple(dict.fromkeys(must_not))
    if not question.strip():
        raise UsageError("give the question the agent will be asked (any language)")
    if expect is None and not must_not:
        raise UsageError("give --expect ID (the memory the question must find) or --must-not ID")
    if not 1 <= top <= 50:
        raise UsageError(f"--top {top}: give a rank from 1 to 50")
    check_choice("intent", intent, INTENTS)
    for memory_id in [*must_not, *([check_id] if check_id else [])]:
        if not is_valid_id(memory_id):
            raise UsageError(f"{memory_id!r} is not a valid id (letters, digits, '_', '.', '-')")
    if not is_check_file(file):
        raise UsageError(f"{file}: checks live in files under checks/ named *.yaml")
    fact = None
    if expect is not None:
        memory = vault.get(expect)
        if by_fact:
            if not memory.meta.get("fact"):
                raise UsageError(f"{expect} has no fact key, so it cannot be expected by fact; drop --by-fact")
            fact = (str(memory.meta["subject"]), str(memory.meta["fact"]))
    return RecallCheck(question=" ".join(question.split()), expect_id=None if fact else expect, expect_fact=fact,
                       top=top, must_not=must_not, intent=intent, why=why, file=file,
                       id=check_id or new_id().replace("mem_", "chk_", 1))


def list_checks(vault: Vault, ref: str | None = None) -> list[RecallCheck]:
    """The recall checks main holds (or ``ref``); a broken file is an InvalidData naming its lines."""
    return _version(vault, ref or vault.main_branch).checks(vault.root)


# ------------------------------------------------------------------ the throw-away clone

SCRATCH_PREFIX = "memrepo-check-"
OWNER_LOCK = "owner.lock"     # held by the run using the clone; the kernel lets go when it dies
STALE_UNOWNED = 3600          # seconds after which a clone that never took its lock is litter


class _Scratch:
    """A throw-away clone of the vault (its own checkout, index and vectors) in which each
    version is checked out and searched; removed afterwards whatever happens. A run killed
    outright (SIGKILL, SIGTERM, a crash) cannot remove its clone: the next run does
    (:func:`sweep_scratch`), which matters most in a memory filesystem, where litter holds RAM."""

    def __init__(self, vault: Vault, parent: str | None = None):
        self.source = vault
        for folder in {parent, None, MEMORY_FS if os.path.isdir(MEMORY_FS) else None}:
            sweep_scratch(folder)
        self.dir = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=parent))
        self.root = self.dir / "vault"
        self.vault: Vault | None = None
        self._owner = ExitStack()

    def __enter__(self) -> _Scratch:
        from memrepo.store import faults
        from memrepo.store.lock import locked
        try:
            self._owner.enter_context(locked(self.dir / OWNER_LOCK, timeout=0, what="the check clone"))
            git.clone_shared(self.source.root, self.root)
        except BaseException:
            shutil.rmtree(self.dir, ignore_errors=True)
            self._owner.close()
            raise
        faults.point("check-clone-made")
        return self

    def __exit__(self, *exc) -> None:
        if self.vault is not None:
            self.vault.close()
        self.vault = None
        shutil.rmtree(self.dir, ignore_errors=True)
        self._owner.close()

    def answer(self, version: _Version, checks: list[RecallCheck]) -> tuple[list[Outcome], str]:
        """Each check's outcome on ``version``, and the semantic state its search ran in."""
        from memrepo.retrieval import search
        vault = self._checkout(version)
        queries = [search.make_query(c.question, limit=max(c.top, RANK_DEPTH), intent=c.intent, **dict(c.filters))
                   for c in checks]
        results, _report = search.search_many(vault, queries)
        states = _states(vault, checks)
        semantic = results[0].semantic if results else "off"
        return [_outcome(c, r.hits, states) for c, r in zip(checks, results)], semantic

    def _checkout(self, version: _Version) -> Vault:
        """Check ``version`` out here and bring this clone's index and vectors to it."""
        from memrepo.retrieval import search
        commit = version.commit
        if version.changes:
            commit = git.write_commit(self.root, parent=version.commit, changes=version.changes, author=SCRATCH_AUTHOR,
                                      message=f"memrepo check: {version.label}", scratch=git.new_scratch_ref())
        git.checkout_detached(self.root, commit)
        if self.vault is None:
            self._seed_index()
            self.vault = Vault(self.root)
        self.vault.refresh()   # the version's own configuration (semantic on or off)
        search.catch_up(self.vault)
        return self.vault

    def _seed_index(self) -> None:
        """Start from a copy of the vault's index and vectors when it has them: they record the
        commit they reflect, so bringing them to a version reads only what differs. A copy
        caught mid-write is thrown away (the index is then built from the files)."""
        source, target = self.source.index_dir, self.root / ".memrepo" / "index"
        if not source.is_dir():
            return
        try:
            shutil.copytree(source, target, dirs_exist_ok=True)
        except (OSError, shutil.Error):
            shutil.rmtree(target, ignore_errors=True)


def sweep_scratch(parent: str | None = None) -> list[Path]:
    """Remove the throw-away clones of runs that died in ``parent`` (default: the temporary
    folder): this user's ``memrepo-check-*`` folders whose owner lock no process holds (or,
    for one without the lock, older than an hour). A live run's clone is never touched, even
    one of another process namespace sharing the folder: the lock is the kernel's."""
    from memrepo.store.lock import is_locked
    folder = Path(parent or tempfile.gettempdir())
    try:
        candidates = [p for p in folder.iterdir() if p.name.startswith(SCRATCH_PREFIX)]
    except OSError:
        return []
    removed = []
    for path in candidates:
        try:
            st = path.lstat()
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            continue
        owner = path / OWNER_LOCK
        if is_locked(owner) if owner.exists() else time.time() - st.st_mtime < STALE_UNOWNED:
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


MEMORY_FS = "/dev/shm"


def _scratch_parent(vault: Vault) -> str | None:
    """Where the throw-away clone goes: the system's temporary folder, or — when ``TMPDIR`` is
    not set and a memory filesystem has room for four times what the clone needs — that one.
    Checking out every memory file is most of a run's cost on a disk (10,000 files: ~7 s of
    system time on a virtual disk, 0.7 s in memory); the clone is removed at the end of the run."""
    if os.environ.get("TMPDIR") or not os.path.isdir(MEMORY_FS) or not os.access(MEMORY_FS, os.W_OK):
        return None
    need = 2 * _folder_size(vault.index_dir) + sum(_folder_size(vault.root / top) for top in MEMORY_ROOTS) + (64 << 20)
    try:
        st = os.statvfs(MEMORY_FS)
    except OSError:
        return None
    return MEMORY_FS if st.f_bavail * st.f_frsize > 4 * need else None


def _folder_size(folder: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                continue
    return total


def _states(vault: Vault, checks: list[RecallCheck]) -> dict[str, str]:
    """Status of each memory a check expects by id, in this checkout ("missing" when absent)."""
    from memrepo.store.document import DocumentError, load_bytes
    wanted = {c.expect_id for c in checks if c.expect_id}
    paths = {p.rsplit("/", 1)[-1][:-3]: p for p in vault.tree_paths() if p.endswith(".md")}
    states = {}
    for memory_id in wanted:
        path = paths.get(memory_id)
        if path is None:
            states[memory_id] = "missing"
            continue
        try:
            states[memory_id] = str(load_bytes((vault.root / path).read_bytes(), path).meta.get("status"))
        except (OSError, DocumentError):
            states[memory_id] = "unreadable"
    return states


def _outcome(check: RecallCheck, hits, states: dict[str, str]) -> Outcome:
    rank = found = None
    for i, hit in enumerate(hits, start=1):
        if hit.id == check.expect_id or (check.expect_fact and (hit.subject, hit.fact) == check.expect_fact):
            rank, found = i, hit.id
            break
    top = {hit.id: i for i, hit in enumerate(hits[:check.top], start=1)}
    intruders = tuple((m, top[m]) for m in check.must_not if m in top)
    expects = bool(check.expect_id or check.expect_fact)
    passed = (not expects or (rank is not None and rank <= check.top)) and not intruders
    state = states.get(check.expect_id or "")
    return Outcome(passed, rank, found, intruders, state if state not in (None, "active") else None)
