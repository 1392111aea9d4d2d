"""Claude's memory tool (``memory_20250818``: view, create, str_replace, insert, delete, rename
over ``/memories``) kept by a vault.

Each file Claude writes is one memory. Its body is exactly the text Claude wrote (the final
newlines too: ``x-memory-newlines`` records them when there are not exactly one), and ``view``
shows that text with its own line numbers; memrepo's front matter never reaches the model.
The front matter is derived from the path (``docs/memory-tool.md`` has the table):

* ``/memories/L2/...``, ``/memories/L3/...``, ``/memories/L4/...``: that layer; else L1;
* a folder named after a kind (``constraints/``, ``decisions/``, ``preferences/``, ...): that
  kind; else ``knowledge`` in L1 and the layer's own kind above it;
* ``subject``: the first folder (after the layer folder), else ``memory``;
* ``fact``: ``memory:<path below /memories>``, so one path is one active memory;
* ``source: agent``, ``author`` the agent, ``session`` when given, ``x-memory-path`` the path.

Every change goes through memrepo's rules: one commit per command (trailers name the agent,
the session and the path), or a proposal a person reviews when the result is high risk (a
long-term layer, a high-risk kind or tag, a change to a memory that was reviewed): the model
cannot promote itself past review. ``delete`` archives (``[memory_tool] delete = "remove"``
removes; git keeps the history either way). The secret scan and the size cap refuse a write
with a message that tells the model what to do instead.

Strings and checks follow the Anthropic SDK's local-filesystem tool (``anthropic`` 2.16.0,
``BetaLocalFilesystemMemoryTool``) except where noted in docs/memory-tool.md: ``create`` on an
existing file replaces its text (Claude's tool description says "creates or overwrites"; the
old text stays in history), and a path is refused outright when any part is ``..``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable

from memrepo.errors import Conflict, InvalidMemory, MemrepoError, NotFound, UsageError
from memrepo.model import KINDS, LAYERS, Memory, now_iso
from memrepo.store.vault import Vault

ROOT = "/memories"
FACT_PREFIX = "memory:"
PATH_FIELD = "x-memory-path"
NEWLINES_FIELD = "x-memory-newlines"
LINE_NUMBER_WIDTH = 6
MAX_PATH = 180           # characters below /memories/ (the fact key holds the path)
MAX_PART = 100
MAX_FACT = 200           # the schema's cap on a fact key (memory:<path>, spaces and % as %XX)
DEFAULT_AGENT = "claude"
COMMANDS = ("view", "create", "str_replace", "insert", "delete", "rename")
# A folder with one of these names sets the kind (plural or singular).
_KIND_FOLDERS = {**{k: k for k in KINDS}, **{k + "s": k for k in KINDS}, "policies": "policy",
                 "identities": "identity", "knowledges": "knowledge"}
_DEFAULT_KIND = {"L1": "knowledge", "L2": "pattern", "L3": "principle", "L4": "identity"}
_ENCODED_DOTS = re.compile(r"%2e|%2f|%5c", re.IGNORECASE)


class MemoryToolError(MemrepoError):
    """A command the memory tool refuses; the message is what the model reads."""

    exit_code = 5
    code = "invalid"


def _missing(path: str) -> NotFound:
    return NotFound(f"The path {path} does not exist. Please provide a valid path.")


# ------------------------------------------------------------------ paths

@dataclass(frozen=True)
class Place:
    """A path below /memories and the front matter it implies."""

    path: str        # as shown to the model: /memories/a/b.md
    rel: str         # a/b.md ('' for the root)

    @property
    def parts(self) -> list[str]:
        return self.rel.split("/") if self.rel else []

    def layer(self) -> str:
        parts = self.parts
        return parts[0].upper() if len(parts) > 1 and parts[0].upper() in LAYERS else "L1"

    def kind(self) -> str:
        folders = self.parts[:-1]
        start = 1 if folders and folders[0].upper() in LAYERS else 0
        for name in folders[start:]:
            if name.lower() in _KIND_FOLDERS:
                return _KIND_FOLDERS[name.lower()]
        return _DEFAULT_KIND[self.layer()]

    def subject(self) -> str:
        folders = self.parts[:-1]
        if folders and folders[0].upper() in LAYERS:
            folders = folders[1:]
        return folders[0] if folders else "memory"

    def fact(self) -> str:
        return FACT_PREFIX + encode(self.rel)

    def under(self, folder: Place) -> bool:
        return not folder.rel or self.rel.startswith(folder.rel + "/")


def encode(rel: str) -> str:
    """A path as a fact key (which holds no white space): ``%`` and white space percent-encoded."""
    return "".join("".join(f"%{b:02X}" for b in c.encode("utf-8")) if c == "%" or c.isspace() else c for c in rel)


def decode(fact: str) -> str:
    from urllib.parse import unquote
    return unquote(fact.removeprefix(FACT_PREFIX))


def place(path: Any) -> Place:
    """The checked place of a path the model gave: under /memories, no traversal, no odd characters."""
    if not isinstance(path, str) or not path.startswith(ROOT) or (len(path) > len(ROOT) and path[len(ROOT)] != "/"):
        raise UsageError(f"Path must start with /memories, got: {path}")
    rel = path[len(ROOT):].strip("/")
    parts = rel.split("/") if rel else []
    if any(p in ("", ".", "..") for p in parts) or "\\" in rel or _ENCODED_DOTS.search(rel):
        raise UsageError(f"Path {path} would escape /memories directory")
    bad = next((c for c in rel if not c.isprintable()), None)
    if bad is not None:
        raise UsageError(f"Path {path} holds the character {bad!r}; use printable characters in memory paths")
    if len(rel) > MAX_PATH or any(len(p) > MAX_PART for p in parts) or len(FACT_PREFIX + encode(rel)) > MAX_FACT:
        raise UsageError(f"Path {path} is too long: keep it under {MAX_PATH} characters below /memories "
                         f"({MAX_PART} per part; a space or % counts as three)")
    if any(not p.strip() for p in parts):   # a folder may be the memory's subject, which needs a name
        raise UsageError(f"Path {path} has a part named only with white space; give every folder and file a name")
    return Place(ROOT + ("/" + rel if rel else ""), rel)


# ------------------------------------------------------------------ reading

@dataclass(frozen=True)
class File:
    """One memory-tool file on main: its place, its memory and the text the model wrote."""

    where: Place
    memory: Memory

    @property
    def text(self) -> str:
        return text_of(self.memory)


def text_of(memory: Memory) -> str:
    """What the model wrote: the body with its recorded final newlines (one when none is recorded)."""
    newlines = memory.meta.get(NEWLINES_FIELD, 1)
    if not isinstance(newlines, int) or isinstance(newlines, bool) or newlines < 0:
        newlines = 1
    body = memory.body.rstrip("\n")
    return body + "\n" * newlines if body or newlines else ""


def body_fields(text: str) -> tuple[str, dict[str, Any]]:
    """The body to store for ``text`` and the field that records its final newlines."""
    newlines = len(text) - len(text.rstrip("\n"))
    return text, ({NEWLINES_FIELD: newlines} if newlines != 1 else {NEWLINES_FIELD: None})


def files(vault: Vault) -> dict[str, File]:
    """Every memory-tool file active on main, by its path below /memories."""
    from memrepo.store import git
    from memrepo.store.checks import check_bytes
    rows = vault.catalog().active_with_fact_prefix(FACT_PREFIX)
    if not rows:
        return {}
    entries = {e.path: e.sha for e in git.ls_tree(vault.root, vault.main_ref, [r["path"] for r in rows])}
    blobs = git.read_blobs(vault.root, entries.values())
    found = {}
    for r in rows:
        if r["path"] not in entries:
            continue
        memory, _problems = check_bytes(r["path"], blobs[entries[r["path"]]])
        if memory is None or not isinstance(memory.meta.get(PATH_FIELD), str):
            continue
        rel = decode(str(r["fact"]))
        found[rel] = File(Place(ROOT + "/" + rel, rel), memory)
    return found


def _size(n: int) -> str:
    """Sizes as the SDK's local tool shows them (``_format_file_size``): 0B, 512B, 1.5K, 2M."""
    if n == 0:
        return "0B"
    units = ["B", "K", "M", "G"]
    i = min((n.bit_length() - 1) // 10, len(units) - 1)
    size = n / (1024 ** i)
    return f"{int(size)}{units[i]}" if size == int(size) else f"{size:.1f}{units[i]}"


def _listing(where: Place, known: dict[str, File]) -> str:
    inside = {rel: f for rel, f in known.items() if f.where.under(where) and rel != where.rel}
    sizes: dict[str, int] = {}
    for rel, f in inside.items():
        below = rel[len(where.rel) + 1:] if where.rel else rel
        parts = below.split("/")
        if any(p.startswith(".") or p == "node_modules" for p in parts[:2]):
            continue
        n = len(f.text.encode("utf-8"))
        for depth in range(1, min(len(parts), 2) + 1):
            key = "/".join(parts[:depth]) + ("/" if depth < len(parts) else "")
            sizes[key] = sizes.get(key, 0) + n
    total = sum(len(f.text.encode("utf-8")) for f in inside.values())
    lines = [f"{_size(total)}\t{where.path}"]
    lines += [f"{_size(sizes[k])}\t{where.path}/{k}" for k in sorted(sizes, key=lambda k: k.rstrip("/").split("/"))]
    return (f"Here're the files and directories up to 2 levels deep in {where.path}, excluding hidden items "
            "and node_modules:\n" + "\n".join(lines))


def _numbered(where: Place, text: str, view_range: Any) -> str:
    lines = text.split("\n")
    start = 1
    if isinstance(view_range, list | tuple) and len(view_range) == 2 and all(isinstance(v, int) for v in view_range):
        first = max(1, view_range[0]) - 1
        last = len(lines) if view_range[1] == -1 else view_range[1]
        lines, start = lines[first:last], first + 1
    numbered = [f"{str(i + start).rjust(LINE_NUMBER_WIDTH)}\t{line}" for i, line in enumerate(lines)]
    return f"Here's the content of {where.path} with line numbers:\n" + "\n".join(numbered)


# ------------------------------------------------------------------ the tool

@dataclass(frozen=True)
class Outcome:
    """What a mutating command did in the vault (for callers that want more than the string)."""

    commit: str | None = None
    proposal: str | None = None
    reason: str | None = None


class MemoryTool:
    """The six commands over one vault, as the agent ``agent`` in session ``session``.

    Each returns the string the model reads, or raises a :class:`memrepo.errors.MemrepoError`
    whose message is what the model reads (the SDK adapter turns it into a ``ToolError``)."""

    def __init__(self, vault: Vault, *, agent: str | None = None, session: str | None = None):
        self.vault = vault
        self.agent = agent or DEFAULT_AGENT
        self.session = session
        self.last = Outcome()

    # -------------------------------------------------------------- dispatch

    def run(self, command: dict[str, Any]) -> str:
        """Run a tool-use input (``{"command": "view", "path": ...}``) as Claude sends it."""
        if not isinstance(command, dict) or command.get("command") not in COMMANDS:
            name = command.get("command") if isinstance(command, dict) else command
            raise UsageError(f"Unknown command: {name}; use one of {', '.join(COMMANDS)}")
        name, args = command["command"], command
        if name == "view":
            return self.view(args.get("path"), args.get("view_range"))
        if name == "create":
            return self.create(args.get("path"), _text(args, "file_text"))
        if name == "str_replace":
            return self.str_replace(args.get("path"), _text(args, "old_str"), _text(args, "new_str", ""))
        if name == "insert":
            return self.insert(args.get("path"), args.get("insert_line"), _text(args, "insert_text"))
        if name == "delete":
            return self.delete(args.get("path"))
        return self.rename(args.get("old_path"), args.get("new_path"))

    # -------------------------------------------------------------- reading

    def view(self, path: Any, view_range: Any = None) -> str:
        where = place(path)
        known = files(self.vault)
        if where.rel in known:
            return _numbered(where, known[where.rel].text, view_range)
        if not where.rel or any(f.where.under(where) for f in known.values()):
            return _listing(where, known)
        pending = self._pending().get(where.rel)
        raise _missing(where.path) if pending is None else NotFound(
            f"The path {where.path} does not exist. Please provide a valid path. (A change to it is pending "
            f"review in proposal {pending}: it exists once a person applies it.)")

    # -------------------------------------------------------------- writing

    def create(self, path: Any, file_text: str) -> str:
        where = place(path)
        if not where.rel:
            raise UsageError(f"Cannot create {where.path}: it is the memory directory itself")
        with self.vault.lock():
            self.vault.require_main_checkout()
            known = files(self.vault)
            if where.rel not in known and any(f.where.under(where) for f in known.values()):
                raise Conflict(f"Cannot create {where.path}: it is a directory")
            if any(where.under(f.where) for f in known.values()):
                raise Conflict(f"Cannot create {where.path}: a part of it is a file")
            self._refuse_pending([where])
            old = known.get(where.rel)
            memory = self._memory(where, file_text, old.memory if old else None)
            done = self._write([memory], [old.memory] if old else [], "memory-create" if old is None else "memory-edit",
                               where.path)
        said = f"File created successfully at: {where.path}" if old is None else \
            f"File {where.path} has been overwritten (its previous text is kept in the vault's history)."
        return said + done

    def str_replace(self, path: Any, old_str: str, new_str: str = "") -> str:
        where = place(path)
        with self.vault.lock():
            self.vault.require_main_checkout()
            old = self._file(where)
            content = old.text
            count = content.count(old_str) if old_str else 0
            if count == 0:
                raise MemoryToolError(f"No replacement was performed, old_str `{old_str}` did not appear verbatim "
                                      f"in {where.path}.")
            if count > 1:
                lines, start = [], 0
                while (pos := content.find(old_str, start)) != -1:
                    lines.append(content[:pos].count("\n") + 1)
                    start = pos + 1
                raise MemoryToolError(f"No replacement was performed. Multiple occurrences of old_str `{old_str}` in "
                                      f"lines: {', '.join(map(str, lines))}. Please ensure it is unique")
            pos = content.find(old_str)
            changed = content[:pos].count("\n")
            new_content = content.replace(old_str, new_str)
            done = self._write([self._memory(where, new_content, old.memory)], [old.memory], "memory-edit", where.path)
        new_lines = new_content.split("\n")
        first, last = max(0, changed - 2), min(len(new_lines), changed + 3)
        snippet = [f"{str(n).rjust(LINE_NUMBER_WIDTH)}\t{new_lines[n - 1]}" for n in range(first + 1, last + 1)]
        return ("The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
                + "\n".join(snippet) + done)

    def insert(self, path: Any, insert_line: Any, insert_text: str) -> str:
        where = place(path)
        with self.vault.lock():
            self.vault.require_main_checkout()
            old = self._file(where)
            lines = old.text.split("\n")
            if lines[-1] == "":
                lines.pop()
            if not isinstance(insert_line, int) or isinstance(insert_line, bool) or not 0 <= insert_line <= len(lines):
                raise MemoryToolError(f"Invalid `insert_line` parameter: {insert_line}. "
                                      f"It should be within the range [0, {len(lines)}].")
            lines.insert(insert_line, insert_text.rstrip("\n"))
            new_content = "\n".join(lines)
            new_content += "" if new_content.endswith("\n") else "\n"
            done = self._write([self._memory(where, new_content, old.memory)], [old.memory], "memory-edit", where.path)
        return f"The file {where.path} has been edited." + done

    def delete(self, path: Any) -> str:
        where = place(path)
        if not where.rel:
            raise UsageError("Cannot delete the /memories directory itself")
        with self.vault.lock():
            self.vault.require_main_checkout()
            gone = self._under(where)
            self._refuse_pending([f.where for f in gone])
            done = self._delete(gone, where.path)
        return f"Successfully deleted {where.path}" + done

    def rename(self, old_path: Any, new_path: Any) -> str:
        source, target = place(old_path), place(new_path)
        if not source.rel:
            raise UsageError("Cannot rename the /memories directory itself")
        if not target.rel or target.under(source):
            raise UsageError(f"Cannot rename {source.path} to {target.path}: the destination is inside it")
        with self.vault.lock():
            self.vault.require_main_checkout()
            known = files(self.vault)
            moving = self._under(source, known)
            if target.rel in known or any(f.where.under(target) for f in known.values()):
                raise Conflict(f"The destination {target.path} already exists")
            if any(target.under(f.where) for f in known.values()):
                raise Conflict(f"Cannot rename to {target.path}: a part of it is a file")
            self._refuse_pending([f.where for f in moving] + [target])
            writes = []
            for f in moving:
                rel = target.rel + f.where.rel[len(source.rel):]
                writes.append(self._memory(place(ROOT + "/" + rel), f.text, f.memory))
            done = self._write(writes, [f.memory for f in moving], "memory-rename",
                               f"{source.path} -> {target.path}")
        return f"Successfully renamed {source.path} to {target.path}" + done

    # -------------------------------------------------------------- helpers

    def _file(self, where: Place) -> File:
        known = files(self.vault)
        if where.rel not in known:
            if any(f.where.under(where) for f in known.values()) or not where.rel:
                raise MemoryToolError(f"The path {where.path} is not a file.")
            raise _missing(where.path)
        self._refuse_pending([where])
        return known[where.rel]

    def _under(self, where: Place, known: dict[str, File] | None = None) -> list[File]:
        known = files(self.vault) if known is None else known
        found = [f for rel, f in sorted(known.items()) if rel == where.rel or f.where.under(where)]
        if not found:
            raise NotFound(f"The path {where.path} does not exist")
        return found

    def _pending(self) -> dict[str, str]:
        """Path below /memories -> the open proposal that changes it."""
        from memrepo.review import proposals
        open_ids = proposals.open_ids(self.vault)
        if not open_ids:
            return {}
        found: dict[str, str] = {}
        on_main = {f.memory.id: rel for rel, f in files(self.vault).items()}
        for memory_id, pid in open_ids.items():
            if memory_id in on_main:
                found[on_main[memory_id]] = pid
        for pid, memories in proposals.memories_of_all(self.vault, proposals.list_proposals(self.vault)).items():
            for m in memories:
                if str(m.meta.get("fact") or "").startswith(FACT_PREFIX):
                    found[decode(str(m.meta["fact"]))] = pid
        return found

    def _refuse_pending(self, places: Iterable[Place]) -> None:
        pending = self._pending()
        for where in places:
            pid = pending.get(where.rel) or next((p for rel, p in pending.items()
                                                  if place(ROOT + "/" + rel).under(where)), None)
            if pid:
                raise Conflict(f"{where.path} has a change pending review in proposal {pid}; it cannot change until "
                               "a person applies or rejects that proposal")
            # a file waiting for review is a file already: nothing goes below it
            above = next((rel for rel in pending if where.under(place(ROOT + "/" + rel))), None)
            if above is not None:
                raise Conflict(f"Cannot write {where.path}: {ROOT}/{above} is a file pending review in proposal "
                               f"{pending[above]}; choose another path")

    def _memory(self, where: Place, text: str, old: Memory | None) -> Memory:
        """The memory that holds ``text`` at ``where`` (a new one, or ``old`` changed in place)."""
        from memrepo.review.writes import build, summary_from
        if not isinstance(text, str):
            raise UsageError("the file text must be a string")
        self._refuse_text(where, text)
        body, ending = body_fields(text)
        fields = {"layer": where.layer(), "kind": where.kind(), "subject": where.subject(), "fact": where.fact(),
                  "summary": summary_from(text)[:200] or where.rel.rsplit("/", 1)[-1], PATH_FIELD: where.path,
                  **ending}
        if old is None:
            meta = {**fields, "source": "agent", "session": self.session}
            return build({k: v for k, v in meta.items() if v is not None}, body, author=self.agent, source="agent")
        keep = old.evolve(**fields, updated=now_iso(), status="active")
        return keep if keep.body == body else Memory(keep.meta, body)

    def _refuse_text(self, where: Place, text: str) -> None:
        from memrepo.store import secretscan
        limit = int(self.vault.config.get("memory_tool", "max_file_chars", 16000))
        if len(text) > limit:
            raise MemoryToolError(
                f"The file {where.path} was not written: {len(text):,} characters is over the {limit:,}-character "
                "cap for a memory file. Keep memory files short; split the notes into several files, or keep "
                "the raw text elsewhere and write down where it is.")
        found = secretscan.scan(text)
        if found:
            lines = ", ".join(sorted({str(f.line) for f in found}, key=int))
            raise MemoryToolError(
                f"The file {where.path} was not written: line {lines} looks like a credential "
                f"({', '.join(sorted({f.rule for f in found}))}). Never store secrets in memory: write where the "
                "secret lives instead (a password manager entry, an environment variable name).")
        if "\x00" in text:
            raise MemoryToolError(f"The file {where.path} was not written: it contains a NUL character; remove it.")

    def _decide(self, after: Memory, before: Memory | None) -> tuple[bool, str]:
        from memrepo.review import risk
        decision = risk.assess(after.meta, self.vault.catalog(), self.vault.config)
        reasons = [decision.reason] if decision.high else []
        if after.meta["layer"] != "L1":
            reasons.append(f"written by agent {self.agent} through the memory tool into long-term layer "
                           f"{after.meta['layer']} (long-term layers change only through review)")
        if before is not None and (before.meta.get("risk") == "high" or before.meta.get("layer") != "L1"):
            reasons.append(f"changes {before.id}, a memory a person reviewed")
        return bool(reasons), "; ".join(reasons) or (decision.reason + " (memory tool)")

    def _write(self, after: list[Memory], before: list[Memory], action: str, what: str) -> str:
        """One commit (or one proposal when any change is high risk); the note the model reads."""
        from memrepo.review import proposals
        from memrepo.store.checks import Row
        by_id = {m.id: m for m in before}
        high, reasons = False, list[str]()
        routed = []
        for m in after:
            is_high, reason = self._decide(m, by_id.get(m.id))
            high, reasons = high or is_high, reasons + ([reason] if is_high else [])
            routed.append((m, reason))
        moved = [b for b in before if b.path not in {m.path for m, _ in routed}]
        level = "high" if high else "low"
        writes = [m.evolve(status="pending_review" if high else "active", risk=level,
                           risk_reason="; ".join(dict.fromkeys(reasons)) if high else r) for m, r in routed]
        try:
            self.vault.check_new(writes if not high else [w.evolve(status="active") for w in writes],
                                 deleted=[Row.of(b) for b in moved])
        except InvalidMemory as e:
            said = dict.fromkeys(p.message for p in e.problems)
            raise MemoryToolError(f"The change to {what} was not made: " + "; ".join(said)) from None
        if high:
            reason = "; ".join(dict.fromkeys(reasons))
            # a memory changed again after review gets a proposal of its own (prop_<id> is taken)
            fresh = proposals.new_proposal_id([]) if by_id else None
            pid = proposals.create(self.vault, writes, reason=reason, deletes=moved, checked=True, proposal_id=fresh).id
            self.last = Outcome(None, pid, reason)
            return (f"\nmemrepo: this change is pending review in proposal {pid} ({reason}); it takes effect when "
                    "a person applies it.")
        commit = self.vault.commit(writes=writes, deletes=[b.path for b in moved],
                                   message=self._message(action, writes[0], what, len(writes))).commit
        self.last = Outcome(commit, None, None)
        return ""

    def _delete(self, gone: list[File], what: str) -> str:
        from memrepo.review import proposals
        reviewed = [f.memory for f in gone if f.memory.meta.get("risk") == "high" or f.memory.meta.get("layer") != "L1"]
        if reviewed:
            reason = (f"agent {self.agent} deletes through the memory tool "
                      f"{', '.join(m.id for m in reviewed)}, reviewed by a person")
            pid = proposals.create(self.vault, [], reason=reason, deletes=[f.memory for f in gone],
                                   proposal_id=proposals.new_proposal_id([])).id
            self.last = Outcome(None, pid, reason)
            return (f"\nmemrepo: this change is pending review in proposal {pid} ({reason}); it takes effect when "
                    "a person applies it.")
        if self.vault.config.get("memory_tool", "delete", "archive") == "remove":
            writes: list[Memory] = []
        else:
            writes = [f.memory.evolve(status="archived", updated=now_iso()) for f in gone]
        from memrepo.store.checks import Row
        self.vault.check_new(writes, deleted=[Row.of(f.memory) for f in gone])
        commit = self.vault.commit(writes=writes, deletes=[f.memory.path for f in gone],
                                   message=self._message("memory-delete", gone[0].memory, what, len(gone))).commit
        self.last = Outcome(commit, None, None)
        return ""

    def _message(self, action: str, first: Memory, what: str, count: int) -> str:
        from memrepo.review.writes import message_for
        extra = {"Memrepo-Agent": self.agent, "Memrepo-Session": self.session or "", "Memrepo-Path": what}
        body = f"{action} {what} ({count} memor{'y' if count == 1 else 'ies'}) through Claude's memory tool"
        return message_for(action, first, extra=extra, body=body)


def _text(args: dict[str, Any], key: str, default: str | None = None) -> str:
    value = args.get(key, default)
    if not isinstance(value, str):
        raise UsageError(f"`{key}` must be a string")
    return value


def run_memory_command(vault: Vault, command: dict[str, Any], *, agent: str | None = None, session: str | None = None) -> str:
    """One memory-tool command on ``vault`` (the MCP ``memory`` tool and scripts call this)."""
    return MemoryTool(vault, agent=agent, session=session).run(command)

