"""Write proposals to the shared pool: dedup, reinforcement and arbitration.

An agent writes to the shared pool with :func:`propose`. A shared *fact* carries an entity key
(subject + fact); shared *knowledge* (kind knowledge, pattern or principle) carries a
confidence and a context summary instead. memrepo compares the proposal's value (summary plus
body, normalised) with the active one and decides:

* **duplicate** (same key, similarity >= ``duplicate_similarity``): the active memory is
  reinforced (weight, evidence, a ``reinforced_by`` record), no new memory is written;
* **new**: written as ``add`` writes (the risk check routes it);
* **conflict** (same key, another value): the ``[arbitration]`` policy decides. ``latest``
  replaces the value on main at once (the old one superseded, with a rollback point);
  ``authority`` does the same for an agent ranked at or above the current value's author and
  sends a lower one to review; ``review`` always opens a proposal whose card shows both values,
  both proposers and their evidence. High-risk kinds always go to review.
"""
from __future__ import annotations

import fnmatch
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from memrepo.errors import InvalidMemory, MemrepoError, Problem
from memrepo.model import Memory, now_iso
from memrepo.review import risk, writes
from memrepo.store import git
from memrepo.store.vault import Vault
from memrepo.team import scopes

KNOWLEDGE_KINDS = ("knowledge", "pattern", "principle")
POLICIES = ("latest", "authority", "review")


@dataclass(frozen=True)
class ProposeResult:
    outcome: str                 # reinforced, written, superseded, proposed
    id: str                      # the memory written, or the one reinforced
    proposal: str | None = None
    reinforced: str | None = None
    superseded: str | None = None
    policy: str | None = None    # the arbitration policy applied to a conflict
    reason: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "id": self.id, "proposal": self.proposal,
                "reinforced": self.reinforced, "superseded": self.superseded, "policy": self.policy}


# ------------------------------------------------------------------ comparing values

_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = rf"[{_CJK}]+|[^\W_]+"  # compiled on first use (re's cache): a class this wide costs every process ~1 ms


def normalise(text: str) -> str:
    """NFKC, case-folded, punctuation dropped, whitespace collapsed."""
    return " ".join(t for t in re.findall(_TOKEN, unicodedata.normalize("NFKC", text).casefold()))


def _tokens(text: str) -> set[str]:
    """Words for alphabetic text, character bigrams (and lone characters) for CJK runs."""
    out: set[str] = set()
    for run in re.findall(_TOKEN, normalise(text)):
        if re.match(rf"[{_CJK}]", run):
            out.update(run[i:i + 2] for i in range(max(len(run) - 1, 1)))
        else:
            out.add(run)
    return out


def similarity(a: str, b: str) -> float:
    """1.0 for the same normalised text; otherwise the Dice overlap of their tokens."""
    if normalise(a) == normalise(b):
        return 1.0
    ta, tb = _tokens(a), _tokens(b)
    if not ta or not tb:
        return 0.0
    return 2 * len(ta & tb) / (len(ta) + len(tb))


def value_of(memory: Memory) -> str:
    return f"{memory.meta.get('summary', '')}\n{memory.body}".strip()


# ------------------------------------------------------------------ policy

def policy_for(vault: Vault, subject: str, fact: str | None) -> str:
    """The arbitration policy for this key: the first matching rule, else the default."""
    section = vault.config.section("arbitration")
    key = f"{subject}/{fact or ''}"
    for n, rule in enumerate(section.get("rules") or ()):
        if not isinstance(rule, dict) or not isinstance(rule.get("match"), str):
            raise MemrepoError(f".memrepo/config.toml:arbitration.rules[{n}]: each rule needs match = \"subject/fact-glob\" and policy")
        if fnmatch.fnmatchcase(key, rule["match"]):
            return _checked(rule.get("policy"), f"arbitration.rules[{n}].policy")
    return _checked(section.get("default"), "arbitration.default")


def _checked(policy: Any, where: str) -> str:
    if policy not in POLICIES:
        raise MemrepoError(f".memrepo/config.toml:{where}: {policy!r} is not a policy; use one of {', '.join(POLICIES)}")
    return str(policy)


def _rank(vault: Vault, agent: str | None) -> int:
    order = list(vault.config.get("arbitration", "authority") or [])
    return order.index(agent) if agent in order else len(order)


# ------------------------------------------------------------------ propose

def propose(vault: Vault, fields: dict[str, Any], body: str = "", *, agent: str | None = None,
            review: str | None = None, as_agent: bool = False, request_id: str | None = None) -> ProposeResult:
    """Propose one memory to the shared pool; the pool reinforces, writes, arbitrates or asks a person.

    ``review`` (a reason) sends a new value, or one that would replace the active value, to a
    person whatever the policy says (an agent's write into a long-term layer: the same rule as
    its private writes). ``as_agent``: the agent is the author of the commits too.
    ``request_id`` (an idempotency key): a retry with the same key returns the first outcome."""
    from memrepo.review import requests
    request_id = requests.checked(request_id)
    agent = scopes.current_agent(agent) or writes.default_author(vault)
    committer = agent if as_agent else None
    fields = {k: v for k, v in fields.items() if v not in (None, (), [])}
    _refuse_incomplete(fields)
    memory = writes.build({**fields, "author": agent, "scope": "shared"}, body, author=agent)
    writes.refuse_foreign_scope(vault, memory, agent)
    with vault.lock():
        vault.require_main_checkout()
        done = requests.recorded(vault, request_id)
        if done:
            return _outcome_of(vault, done)
        current = _current(vault, memory)
        if current is None:
            return _written(writes.write_locked(vault, memory, review=review, agent=committer, request_id=request_id))
        threshold = float(vault.config.get("arbitration", "duplicate_similarity", 0.85))
        if similarity(value_of(current), value_of(memory)) >= threshold:
            return _reinforce(vault, current, memory, agent, committer, request_id=request_id)
        return _arbitrate(vault, current, memory, agent, review=review, committer=committer, request_id=request_id)


def _outcome_of(vault: Vault, commit: str) -> ProposeResult:
    """The outcome a proposal with this request id had (it made ``commit``)."""
    import re

    from memrepo.review.proposals import trailers
    t = trailers(git.commits(vault.root, [commit])[commit].body)
    action = t.get("Memrepo-Action")
    if action == "reinforce":
        return ProposeResult("reinforced", t["Memrepo-Id"], reinforced=t["Memrepo-Id"])
    if action == "arbitrate":
        return ProposeResult("superseded", t["Memrepo-Id"], superseded=t.get("Memrepo-Supersedes"),
                             policy=t.get("Memrepo-Policy"))
    if action == "propose":
        policy = re.search(r"arbitration: (\w+)", t.get("Memrepo-Reason", ""))
        return ProposeResult("proposed", t.get("Memrepo-Ids", "").split(",")[0], proposal=t.get("Memrepo-Proposal"),
                             policy=policy.group(1) if policy else None)
    return _written(writes.result_of(vault, commit))


def _refuse_incomplete(fields: dict[str, Any]) -> None:
    where = "(proposal)"
    if fields.get("scope") not in (None, "shared"):
        raise InvalidMemory([Problem(where, "scope", "proposals go to the shared pool; write private memories with 'add --scope private'")],
                            "nothing was written")
    problems = []
    if fields.get("kind") in KNOWLEDGE_KINDS:
        if fields.get("confidence") is None:
            problems.append(Problem(where, "confidence", f"shared {fields['kind']} needs --confidence 0..1 (how sure the proposer is)"))
        if not fields.get("summary"):
            problems.append(Problem(where, "summary", f"shared {fields['kind']} needs --summary: the context it was learned in"))
    else:
        if not fields.get("subject"):
            problems.append(Problem(where, "subject", "a shared fact needs an entity key: --subject (e.g. user) and --fact (e.g. ui.theme)"))
        if not fields.get("fact"):
            problems.append(Problem(where, "fact", "a shared fact needs an entity key: --subject (e.g. user) and --fact (e.g. ui.theme)"))
        if not fields.get("summary"):
            problems.append(Problem(where, "summary", "a proposal needs --summary VALUE: the value that is compared and shared"))
    if problems:
        raise InvalidMemory(problems, "nothing was written")


def _current(vault: Vault, memory: Memory) -> Memory | None:
    """The active memory this proposal is about: the same entity key, or for knowledge
    without a key, the most similar active memory of the same subject and kind."""
    catalog = vault.catalog()
    if memory.key:
        rows = catalog.active_for(*memory.key)
        return vault.read_at(vault.main_ref, rows[0].path) if rows else None
    threshold = float(vault.config.get("arbitration", "duplicate_similarity", 0.85))
    best, best_score = None, 0.0
    candidates = [r for r in catalog.query(subject=memory.meta["subject"], kind=memory.meta["kind"], status="active")
                  if not r["fact"]]
    for row in candidates[-500:]:  # the newest few hundred: knowledge without a key is compared on text
        if similarity(row["summary"] or "", memory.meta["summary"]) < threshold / 2:
            continue
        other = vault.read_at(vault.main_ref, row["path"])
        score = similarity(value_of(other), value_of(memory))
        if score > best_score:
            best, best_score = other, score
    return best if best_score >= threshold else None


def _written(result: writes.WriteResult) -> ProposeResult:
    if result.proposal:
        return ProposeResult("proposed", result.id, proposal=result.proposal, reason=result.risk_reason or "")
    return ProposeResult("written", result.id, reason=result.risk_reason or "")


def reviewed(vault: Vault, memory: Memory) -> bool:
    """True for a memory a person reviewed (it came through a proposal, or it is high risk under
    the policy and so could only become active through review): its content is fixed."""
    from memrepo.review.gate import high_risk_reason
    return bool(memory.meta.get("proposal")) or high_risk_reason(dict(memory.meta), vault.config) is not None


def _reinforce(vault: Vault, current: Memory, proposed: Memory, agent: str, committer: str | None = None,
               request_id: str | None = None) -> ProposeResult:
    """The same value again: a ``reinforced_by`` record; for a memory nobody reviewed, also more
    weight and the proposer's evidence. A reviewed memory's evidence, weight and body are what a
    person approved: a re-proposal never changes them (its evidence goes into the commit message)."""
    now = now_iso()
    # The same agent twice within one second: one record (the schema wants unique items).
    record = list(dict.fromkeys([*current.meta.get("reinforced_by", ()), f"{agent} {now}"]))
    offered = [e for e in proposed.meta.get("evidence", ()) if e not in current.meta.get("evidence", ())]
    if reviewed(vault, current):
        updated = current.evolve(reinforced_by=record, updated=now)
        note = (f"{agent} proposed the same value of a reviewed memory: recorded, nothing else changed"
                + (f"; evidence offered (not added): {', '.join(offered)}" if offered else "") + ".")
    else:
        step = float(vault.config.get("arbitration", "reinforce_step", 0.1))
        weight = round(min(1.0, float(current.meta.get("weight") or 0.5) + step), 4)
        evidence = list(dict.fromkeys([*current.meta.get("evidence", ()), *proposed.meta.get("evidence", ())]))
        cites = list(dict.fromkeys([*current.meta.get("cites", ()), *proposed.meta.get("cites", ())]))
        updated = current.evolve(weight=weight, evidence=evidence or None, cites=cites or None,
                                 reinforced_by=record, updated=now)
        note = f"{agent} proposed the same value; weight {current.meta.get('weight', 'unset')} -> {weight}."
    vault.check_new([updated])
    from memrepo.review import requests
    message = writes.message_for("reinforce", updated, body=note, extra={"Memrepo-Reinforced-By": agent,
                                                                      **({requests.TRAILER: request_id} if request_id else {})})
    vault.commit(writes=[updated], message=message, agent=committer, also=requests.record(request_id))
    return ProposeResult("reinforced", current.id, reinforced=current.id,
                         reason=f"same value as active {current.id}: reinforced by {agent}")


def _arbitrate(vault: Vault, current: Memory, proposed: Memory, agent: str, *, review: str | None = None,
               committer: str | None = None, request_id: str | None = None) -> ProposeResult:
    from memrepo.review import requests
    subject, fact = proposed.meta["subject"], proposed.meta.get("fact")
    policy = policy_for(vault, subject, fact)
    config = vault.config
    # Everything the risk check says except the override itself: arbitration decides that.
    others = risk.assess(dict(proposed.meta, fact=None), vault.catalog(), config)
    high_kind = proposed.meta.get("kind") in config.get("risk", "high_kinds", ())
    rival = current.meta.get("author", "unknown")
    wins = policy == "latest" or (policy == "authority" and _rank(vault, agent) <= _rank(vault, rival))
    what = f"({subject}, {fact})" if fact else f"{subject} {proposed.meta['kind']}"
    if wins and not others.high and not high_kind and not review:
        reason = f"arbitration ({policy}): {agent}'s value replaces {current.id} by {rival} for {what}"
        new = proposed.evolve(status="active", supersedes=current.id, risk="low", risk_reason=reason,
                              rollback_point=vault.head())
        old = current.evolve(status="superseded", superseded_by=new.id, updated=now_iso())
        vault.check_new([new, old])
        message = writes.message_for("arbitrate", new, extra={"Memrepo-Policy": policy, "Memrepo-Supersedes": current.id,
                                                              **({requests.TRAILER: request_id} if request_id else {})},
                                     body=f"Conflict on {what}: {current.meta.get('summary')!r} ({rival}) -> "
                                          f"{proposed.meta.get('summary')!r} ({agent}); policy {policy}.")
        from memrepo.review.records import ARBITRATED_PREFIX
        record = git.RefChange(ARBITRATED_PREFIX + new.id, git.NEW_COMMIT, None)
        vault.commit(writes=[new, old], message=message, also=[record, *requests.record(request_id)],
                     agent=committer)  # the record tells the audit
        return ProposeResult("superseded", new.id, superseded=current.id, policy=policy, reason=reason)
    why = (review if review else "high-risk kind always goes to review" if high_kind else others.reason if others.high
           else f"{agent} ranks below {rival}" if policy == "authority" else "policy review: a person decides")
    reason = (f"conflict on {what}: {agent} proposes {proposed.meta.get('summary')!r}, active {current.id} by {rival} "
              f"says {current.meta.get('summary')!r} (arbitration: {policy}; {why})")
    from memrepo.review import proposals
    pending = proposed.evolve(status="pending_review", supersedes=current.id, risk="high", risk_reason=reason)
    from memrepo.team import citations
    cited = citations.citers(vault, current.id)
    proposal = proposals.create(vault, [pending], reason=reason, affected=cited, agent=committer, request_id=request_id)
    return ProposeResult("proposed", pending.id, proposal=proposal.id, policy=policy, reason=reason)
