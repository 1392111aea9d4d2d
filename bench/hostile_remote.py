"""The hostile-remote section of ``bench/reliability.py``: what a teammate with push access to the
shared remote (or the author of a vault someone clones) can send, and what must come of it.

* **generated trees**: a commit whose tree holds, at a random depth under a random folder, a
  ``.git`` component (in one of the spellings git's own checkout refuses: case, NTFS and HFS+
  equivalents, ``git~1``), a ``..`` component, a symlink, a submodule, or a file under
  ``.memrepo/`` other than ``config.toml``, is pushed to the shared remote. Through
  ``memrepo sync`` (fast-forward or merge, at random) the trial passes when the sync refuses
  with exit 5 naming the path and the commit, main and ``.git/config`` are unchanged, nothing
  was written outside the vault and the vault is whole afterwards (the same checks as the
  crash trials). Through a plain ``git pull`` (which memrepo does not see) it passes when git
  refused the change itself, or when the next memrepo command refuses it (exit 5) and nothing
  planted was read or run.
* **the reported cases**: a pushed policy that switches review off, a hand merge marked as a
  sync, a forged proposal with copied trailers, credentials in a pruned tool result, a pulled
  search index that runs code, a pulled symlinked evidence file, a pulled front matter of the
  wrong type: each one trial with its own pass condition.
"""
from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

DOT_GIT = [".git", ".GIT", ".Git", ".git.", ".git ", "git~1", "GIT~1", ".g\u200cit", ".gi\u200dt", ".git::$INDEX_ALLOCATION"]
STATE = [".memrepo/state/catalog.sqlite", ".memrepo/index/CURRENT", ".memrepo/private/agent/x.md", ".memrepo/evidence/x.txt"]
KINDS = ("dotgit", "dotdot", "symlink", "submodule", "state", "longname")


def _git(root: Path, env: dict, *args: str, data: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(root), *args], input=data, capture_output=True, env=env)


def _out(root: Path, env: dict, *args: str, data: bytes | None = None) -> str:
    proc = _git(root, env, *args, data=data)
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {proc.stderr.decode()}")
    return proc.stdout.decode("utf-8", "surrogateescape").strip()


def _tree_with(root: Path, env: dict, base: str, parts: list[str], mode: str, sha: str) -> str:
    """``base`` tree with one more entry at ``parts`` (names taken literally), via git mktree."""
    listing = _git(root, env, "ls-tree", "-z", base).stdout.decode("utf-8", "surrogateescape") if base else ""
    entries, sub = [], None
    for rec in filter(None, listing.split("\0")):
        meta, name = rec.split("\t", 1)
        m, kind, s = meta.split()
        if name == parts[0]:
            sub = s if kind == "tree" else None
            continue
        entries.append(f"{m} {kind} {s}\t{name}")
    if len(parts) > 1:
        inner = _tree_with(root, env, sub or "", parts[1:], mode, sha)
        entries.append(f"040000 tree {inner}\t{parts[0]}")
    else:
        entries.append(f"{mode} {({'160000': 'commit', '040000': 'tree'}).get(mode, 'blob')} {sha}\t{parts[0]}")
    return _out(root, env, "mktree", data=("\n".join(entries) + "\n").encode("utf-8", "surrogateescape"))


def generated_path(rng: random.Random, kind: str) -> tuple[list[str], str, bytes]:
    """(path components, git mode, content) of one hostile entry at a random depth."""
    folders = [rng.choice(["memories", "archive", "evidence", "notes", "x"])] + \
              [rng.choice(["L1", "L2", "a", "b", "2026-12-01"]) for _ in range(rng.randint(0, 3))]
    folders = folders[:rng.randint(0, len(folders))]
    if kind == "dotgit":
        return folders + [rng.choice(DOT_GIT), rng.choice(["config", "hooks"])] + (["pre-commit"] if rng.random() < .3 else []), \
            "100644", b'[core]\n\tfsmonitor = "touch PWNED; false"\n'
    if kind == "dotdot":
        return folders + [".."] * rng.randint(1, 4) + ["evil.txt"], "100644", b"attacker\n"
    if kind == "symlink":
        return folders + ["mem_link.md"], "120000", rng.choice([b"/etc/passwd", b"../../..", b"~/.ssh/id_rsa"])
    if kind == "submodule":
        return folders + ["sub"], "160000", b""
    if kind == "longname":  # one a file system takes, but not with memrepo's temporary name beside it
        return folders + ["n" * rng.randint(241, 255)], "100644", b"too long\n"
    return rng.choice(STATE).split("/"), "100644", b"planted\n"


def push_entry(attacker: Path, env: dict, parts: list[str], mode: str, data: bytes) -> str:
    _out(attacker, env, "fetch", "-q", "origin")
    parent = _out(attacker, env, "rev-parse", "origin/main")
    base = _out(attacker, env, "rev-parse", f"{parent}^{{tree}}")
    sha = parent if mode == "160000" else _out(attacker, env, "hash-object", "-w", "--stdin", data=data)
    tree = _tree_with(attacker, env, base, parts, mode, sha)
    commit = _out(attacker, env, "commit-tree", tree, "-p", parent, "-m", "notes from a teammate")
    _out(attacker, env, "push", "-q", "origin", f"{commit}:refs/heads/main")
    return commit


def team(work: Path, name: str, new_vault) -> tuple:
    """A victim vault synced with a bare remote, and an attacker's plain clone of it."""
    server = work / f"{name}.git"
    victim = new_vault(work, f"{name}-victim")
    env = victim.env
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(server)], check=True, env=env)
    _out(victim.root, env, "remote", "add", "origin", str(server))
    victim.memrepo("sync")
    attacker = work / f"{name}-attacker"
    _out(work, env, "clone", "-q", str(server), str(attacker))
    return victim, attacker, server


def generated_trees(work: Path, trees: int, rng: random.Random, new_vault) -> list[dict]:
    rows = []
    for route in ("sync", "pull"):
        failures, trials = [], 0
        for n in range(trees):
            kind = KINDS[n % len(KINDS)]
            victim, attacker, _server = team(work, f"gen-{route}-{n}", new_vault)
            env = victim.env
            if route == "sync" and rng.random() < 0.5:
                victim.memrepo("add", "--summary", "a local note first")  # diverged: the merge path
            head, config = victim.head(), (victim.root / ".git" / "config").read_bytes()
            parts, mode, data = generated_path(rng, kind)
            try:
                bad = push_entry(attacker, env, parts, mode, data)
            except RuntimeError as e:  # git itself would not even build it: nothing was sent
                failures.append(f"{kind} {'/'.join(parts)}: could not be built ({str(e)[:80]})")
                continue
            trials += 1
            shown = "/".join(parts)
            if route == "sync":
                proc = victim.memrepo("sync")
                err = proc.stderr.decode("utf-8", "replace")
                if proc.returncode != 5 or bad[:12] not in err:
                    failures.append(f"{kind} {shown!r}: sync exit {proc.returncode}: {err[-160:]}")
                    continue
                if victim.head() != head or (victim.root / ".git" / "config").read_bytes() != config:
                    failures.append(f"{kind} {shown!r}: main or .git/config changed")
                    continue
            else:
                pulled = _git(victim.root, env, "pull", "-q", "--no-rebase", "origin", "main")
                if pulled.returncode == 0:
                    proc = victim.memrepo("search", "note")
                    if proc.returncode != 5:
                        failures.append(f"{kind} {shown!r}: after git pull, search exit {proc.returncode}")
                        continue
                    _git(victim.root, env, "reset", "-q", "--hard", head)  # the person undoes the pull
            if (work / "evil.txt").exists() or (victim.root.parent / "evil.txt").exists() or (work / "PWNED").exists():
                failures.append(f"{kind} {shown!r}: wrote outside the vault")
                continue
            wrong = victim.whole(set())
            if wrong:
                failures.append(f"{kind} {shown!r}: {wrong[:160]}")
        rows.append({"class": f"hostile remote: generated trees via {route}", "trials": trials,
                     "passed": trials - len([f for f in failures if "could not be built" not in f]),
                     "failed": len([f for f in failures if "could not be built" not in f]),
                     "detail": {"failures": failures}})
    return rows


# ------------------------------------------------------------------ the reported cases

def reported_cases(work: Path, new_vault) -> list[dict]:
    outcomes = {}
    for name, case in (("policy switched off by a push", _policy), ("hand merge marked as a sync", _sync_trailer),
                       ("forged proposal with copied trailers", _forged_proposal),
                       ("credentials in a pruned tool result", _prune_secrets),
                       ("pulled search index that runs code", _pickled_index),
                       ("pulled symlinked evidence file", _evidence_link),
                       ("pulled front matter of the wrong type", _wrong_type)):
        try:
            outcomes[name] = case(work, new_vault)
        except Exception as e:  # a crash of the bench is a failed trial, reported
            outcomes[name] = f"bench error: {e}"
    failures = [f"{name}: {why}" for name, why in outcomes.items() if why]
    return [{"class": "hostile remote: reported cases", "trials": len(outcomes), "passed": len(outcomes) - len(failures),
             "failed": len(failures), "detail": {"failures": failures}}]


def _commit_push(attacker: Path, env: dict, message: str = "tidy") -> str:
    _out(attacker, env, "add", "-A", "-f")
    _out(attacker, env, "commit", "-q", "--no-verify", "-m", message)
    _out(attacker, env, "push", "-q", "origin", "main")
    return _out(attacker, env, "rev-parse", "HEAD")


def _policy(work: Path, new_vault) -> str | None:
    victim, attacker, _ = team(work, "case-policy", new_vault)
    (attacker / ".memrepo" / "config.toml").write_text('[risk]\nhigh_kinds = []\nhigh_sources = []\nhigh_layers = []\n')
    bad = _commit_push(attacker, victim.env)
    synced = victim.memrepo("sync")
    added = json.loads(victim.memrepo("add", "--kind", "constraint", "--summary", "a rule", "--json").stdout)
    checked = victim.memrepo("validate")
    if bad[:12] not in synced.stderr.decode() or added["status"] != "pending_review" or checked.returncode != 1:
        return f"sync said {synced.stderr.decode()[-120:]!r}, add gave {added['status']}, validate exit {checked.returncode}"
    return None


def _hand_memory(root: Path, memory_id: str, kind: str, status: str, extra: str = "") -> None:
    (root / "memories" / "L2").mkdir(parents=True, exist_ok=True)
    (root / "memories" / "L2" / f"{memory_id}.md").write_text(
        f"---\nid: {memory_id}\nlayer: L2\nkind: {kind}\nsubject: ops\nsummary: {memory_id}\nstatus: {status}\n"
        f"source: user\n{extra}created: \"2026-11-01T00:00:00+00:00\"\n---\nbody\n", encoding="utf-8")


def _sync_trailer(work: Path, new_vault) -> str | None:
    v = new_vault(work, "case-sync-trailer")
    env = v.env
    _out(v.root, env, "checkout", "-q", "-b", "side")
    _hand_memory(v.root, "mem_c", "constraint", "active")
    _out(v.root, env, "add", "-A")
    _out(v.root, env, "commit", "-q", "--no-verify", "-m", "side")
    _out(v.root, env, "checkout", "-q", "main")
    v.memrepo("add", "--summary", "main moves on")
    _out(v.root, env, "merge", "--no-ff", "--no-verify", "side", "-m", "memrepo: sync merge\n\nMemrepo-Action: sync\n")
    checked = v.memrepo("validate")
    return None if checked.returncode == 1 and b"mem_c.md" in checked.stdout + checked.stderr else "validate passed"


def _forged_proposal(work: Path, new_vault) -> str | None:
    v = new_vault(work, "case-forged")
    env = v.env
    _out(v.root, env, "checkout", "-q", "-b", "proposal/prop_mem_p")
    _hand_memory(v.root, "mem_p", "permission", "pending_review", "proposal: prop_mem_p\n")
    _out(v.root, env, "add", "-A")
    _out(v.root, env, "commit", "-q", "--no-verify", "-m", "memrepo: propose\n\nMemrepo-Action: propose\n"
         "Memrepo-Proposal: prop_mem_p\nMemrepo-Ids: mem_p\n")
    path = v.root / "memories" / "L2" / "mem_p.md"
    path.write_text(path.read_text().replace("pending_review", "active"))
    _out(v.root, env, "commit", "-q", "--no-verify", "-am", "memrepo: activate\n\nMemrepo-Action: activate\n"
         "Memrepo-Proposal: prop_mem_p\nMemrepo-Ids: mem_p\n")
    _out(v.root, env, "checkout", "-q", "main")
    hooked = _git(v.root, env, "merge", "--no-ff", "-m", "merge", "proposal/prop_mem_p")
    _git(v.root, env, "merge", "--abort")
    _out(v.root, env, "merge", "--no-ff", "--no-verify", "-m", "merge", "proposal/prop_mem_p")
    checked = v.memrepo("validate")
    if hooked.returncode == 0 or checked.returncode != 1:
        return f"hook exit {hooked.returncode}, validate exit {checked.returncode}"
    return None


def _prune_secrets(work: Path, new_vault) -> str | None:
    v = new_vault(work, "case-prune")
    secret = "ghp_" + "".join(random.Random(7).choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789") for _ in range(36))
    dump = "HOME=/home/ops\n" + f"GITHUB_TOKEN={secret}\n" + "".join(f"VAR_{i}=v{i}\n" for i in range(500))
    transcript = work / "env-dump.json"
    transcript.write_text(json.dumps([{"role": "user", "content": "why?"}, {"role": "tool", "content": dump},
                                      *({"role": "assistant", "content": str(i)} for i in range(4))]))
    pruned = v.memrepo("prune", str(transcript), "--soft-chars", "500")
    history = _git(v.root, v.env, "log", "-p", "--all").stdout.decode()
    return None if pruned.returncode == 0 and secret not in history else "the token reached git"


def _pickled_index(work: Path, new_vault) -> str | None:
    victim, attacker, _ = team(work, "case-pickle", new_vault)
    victim.memrepo("search", "anything")
    marker = work / "PICKLE-RAN"
    index = attacker / ".memrepo" / "index"
    (index / "gen-000099").mkdir(parents=True)
    parent = _out(attacker, victim.env, "rev-parse", "HEAD")
    script = ("import os, sys\nfrom whoosh.filedb.filestore import FileStorage\nfrom whoosh.index import TOC\n"
              "from memrepo.retrieval.fields import schema\n"
              "class Evil:\n    def __reduce__(self):\n        return (os.system, (sys.argv[2],))\n"
              "TOC(schema(), Evil(), 1).write(FileStorage(sys.argv[1]), 'MAIN')\n")
    import sys
    subprocess.run([sys.executable, "-c", script, str(index / "gen-000099"), f"touch {marker}"], check=True)
    from memrepo.retrieval.index import FORMAT
    (index / "gen-000099.json").write_text(json.dumps({"format": FORMAT, "commit": parent}))
    (index / "CURRENT").write_text("gen-000099")
    _commit_push(attacker, victim.env, "faster search for everyone")
    _out(victim.root, victim.env, "pull", "-q", "--no-rebase", "origin", "main")
    searched = victim.memrepo("search", "anything")
    return None if not marker.exists() and searched.returncode == 5 else "the planted pickle ran or was read"


def _evidence_link(work: Path, new_vault) -> str | None:
    victim, attacker, _ = team(work, "case-evidence", new_vault)
    secret = work / "secret.txt"
    secret.write_text("TOP-SECRET\n")
    (attacker / "evidence").mkdir()
    (attacker / "evidence" / ("a" * 64 + ".txt")).symlink_to(secret)
    _commit_push(attacker, victim.env)
    _out(victim.root, victim.env, "pull", "-q", "--no-rebase", "origin", "main")
    shown = victim.memrepo("evidence", "aaaaaaaa")
    return None if shown.returncode == 5 and b"TOP-SECRET" not in shown.stdout else "the file outside the vault was printed"


def _wrong_type(work: Path, new_vault) -> str | None:
    victim, attacker, _ = team(work, "case-type", new_vault)
    _hand_memory(attacker, "mem_bad", "[a]", "active")
    _commit_push(attacker, victim.env)
    _out(victim.root, victim.env, "pull", "-q", "--no-rebase", "origin", "main")
    results = [victim.memrepo(*args) for args in (["list"], ["context"], ["search", "mem"], ["show", "mem_bad"])]
    if any(b"Traceback" in r.stderr for r in results) or results[0].returncode != 0 or b"mem_bad.md:kind" not in results[0].stderr:
        return "a reader failed or did not name the file"
    return None
