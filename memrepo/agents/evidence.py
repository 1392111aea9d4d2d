"""Evidence: raw text kept in full, content-addressed, so memories and pruned transcripts can
point at it (``evidence:<sha256-prefix>``) instead of carrying it.

Files live at ``evidence/<sha256>.txt`` in the vault and are committed (one commit per batch;
the same content is stored once). A file over ``[evidence] max_file_bytes`` stays out of git,
in ``.memrepo/evidence/`` (git-ignored), and the caller is told so.

A tool result is raw output: an ``env`` dump, a config file, a ``curl`` line can carry
credentials, and evidence is committed and pushed by ``sync``. So every text passes the same
credential scan as a memory before it is stored: ``[evidence] secrets = "redact"`` (the default)
stores it with each credential replaced by ``[REDACTED:<rule>]``; ``"refuse"`` stores nothing
and names the text and the rule.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from memrepo.errors import NotFound, UsageError
from memrepo.store.vault import Vault, atomic_write

EVIDENCE_DIR = "evidence"
LOCAL_DIR = ".memrepo/evidence"
POINTER_PREFIX = "evidence:"
POINTER_HEX = 12
_HEX_RE = re.compile(r"^[0-9a-f]{4,64}$")


@dataclass(frozen=True)
class Saved:
    sha: str
    path: str
    size: int
    in_git: bool
    new: bool

    @property
    def pointer(self) -> str:
        return POINTER_PREFIX + self.sha[:POINTER_HEX]


def digest(text: str) -> str:
    import hashlib  # here: every command line imports this module through memrepo.api
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Stored:
    """A text as evidence keeps it: credentials redacted (``rules`` names what was found)."""
    text: str
    rules: tuple[str, ...] = ()

    @property
    def pointer(self) -> str:
        return POINTER_PREFIX + digest(self.text)[:POINTER_HEX]


def as_stored(vault: Vault, text: str, *, where: str = "text") -> Stored:
    """``text`` as evidence stores it under the vault's ``[evidence] secrets`` policy; with
    ``refuse`` an InvalidData naming ``where`` and the rules when it holds a credential."""
    from memrepo.store.secretscan import redact
    clean, found = redact(text)
    if not found:
        return Stored(text)
    rules = tuple(dict.fromkeys(f.rule for f in found))
    if vault.config.get("evidence", "secrets", "redact") == "refuse":
        from memrepo.errors import InvalidData, Problem
        raise InvalidData([Problem(where, f"line {f.line}", f.message()) for f in found],
                          "nothing was saved as evidence ([evidence] secrets = \"refuse\"): remove the credentials "
                          "from the text, or set secrets = \"redact\" to store it with them replaced")
    return Stored(clean, rules)


def save_evidence(vault: Vault, texts: list[str | Stored], *, why: str = "tool results") -> tuple[list[Saved], str | None]:
    """Keep each text as evidence (each passes :func:`as_stored` first, unless given as
    :class:`Stored`); returns what was saved (in order) and the commit, if any."""
    from memrepo.store import git
    limit = int(vault.config.get("evidence", "max_file_bytes", 1048576))
    stored = [t.text if isinstance(t, Stored) else as_stored(vault, t, where=f"text {n}").text
              for n, t in enumerate(texts, start=1)]
    saved: dict[str, Saved] = {}
    files: dict[str, bytes | None] = {}
    out = []
    with vault.lock():
        for text in stored:
            sha = digest(text)
            if sha not in saved:
                data = text.encode("utf-8")
                if len(data) > limit:
                    target = vault.root / LOCAL_DIR / f"{sha}.txt"
                    new = not target.exists()
                    if new:
                        atomic_write(target, data)
                    saved[sha] = Saved(sha, f"{LOCAL_DIR}/{sha}.txt", len(data), False, new)
                else:
                    path = f"{EVIDENCE_DIR}/{sha}.txt"
                    new = not git.exists(vault.root, f"{vault.main_ref}:{path}")
                    if new:
                        files[path] = data
                    saved[sha] = Saved(sha, path, len(data), True, new)
            out.append(saved[sha])
        commit = None
        if files:
            vault.require_main_checkout()
            message = (f"memrepo: keep {len(files)} evidence file{'s' if len(files) != 1 else ''} ({why})\n\n"
                       + "".join(f"- {POINTER_PREFIX}{Path(p).stem[:POINTER_HEX]} ({len(b or b''):,} bytes)\n" for p, b in sorted(files.items()))
                       + f"\nMemrepo-Action: evidence\nMemrepo-Count: {len(files)}\n")
            commit = vault.commit(files=files, message=message).commit
    return out, commit


@dataclass(frozen=True)
class Evidence:
    sha: str
    path: str
    text: str

    @property
    def pointer(self) -> str:
        return POINTER_PREFIX + self.sha[:POINTER_HEX]


def get_evidence(vault: Vault, pointer: str) -> Evidence:
    """The evidence a pointer names: ``evidence:<hex prefix>`` or the bare prefix (4+ hex digits)."""
    from memrepo.store.files import read_inside
    prefix = pointer.strip().removeprefix(POINTER_PREFIX).lower()
    if not _HEX_RE.match(prefix):
        raise UsageError(f"{pointer!r} is not an evidence pointer; give 'evidence:<sha256 prefix>' (4 to 64 hex digits)")
    vault.ensure_trusted()
    found = []
    for folder in (EVIDENCE_DIR, LOCAL_DIR):
        directory = vault.root / folder
        if directory.is_dir():
            found += [(folder, p) for p in directory.glob(f"{prefix}*.txt")]
    if not found:
        raise NotFound(f"no evidence {POINTER_PREFIX}{prefix} in {vault.root}; pointers come from 'memrepo prune'")
    if len({p.stem for _, p in found}) > 1:
        names = ", ".join(sorted(POINTER_PREFIX + p.stem[:16] for _, p in found)[:5])
        raise UsageError(f"{POINTER_PREFIX}{prefix} is ambiguous ({names}); give more hex digits")
    folder, path = found[0]
    data = read_inside(vault.root, f"{folder}/{path.name}")  # never through a link (a clone can hold them)
    return Evidence(path.stem, f"{folder}/{path.name}", data.decode("utf-8", "replace"))
