#!/usr/bin/env python3
"""Term clusters on the LoCoMo dev conversations: can anything tell a recurring topic from noise?

  .venv/bin/python bench/distill_clusters.py [--shared ../shared/bench] [--asked 2]

An analysis, not a product feature. A *term cluster* is every entry of one speaker holding one
content word that speaker says on three or more days (after distill's small-talk removal). Such
clusters reach most of the recurring topics distill misses, but only about half of them are a
topic. This script scores every cluster with the LoCoMo distill gold's own rule (strict) and
prints, per feature, how many clusters have it, the share that are hits, how many are mostly
small talk and how many topics the shipped candidates miss they reach:

* the other speaker says the word (in how many sessions), or asks about it (a sentence ending
  in "?"; "how is the studio going?": a topic the other person returns to);
* the word is a name (capitalised, not first in its sentence);
* the speaker holds ``speaker_share`` (0.75, distill's shipped value) of the entries in the
  word's clusters.

Then it builds the best of them — the speaker's own word the other speaker asks about in
``--asked`` sessions or more — into candidates that fill only the places left under the cap,
most days first, and prints the fold table. Figures: ``bench/RESULTS.md``, "Third round".

The gold and the converter are read from the benchmark kit's folder at run time (the public
LoCoMo benchmark, never copied into this repository): pass ``--shared`` or set
``MEMREPO_SHARED_BENCH``; without it the script says where it is expected and stops.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import distill as bench  # noqa: E402  (bench/distill.py, beside this script)

from memrepo.config import DEFAULTS
from memrepo.lifecycle import distill_terms as terms
from memrepo.lifecycle.distill import find_patterns

_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+")
PARAMS = ("window_days", "min_occurrences", "count_by", "similarity", "common_day_share",
          "max_per_subject", "max_per_run")


def gold_of(scorer, g: dict) -> tuple[list[dict], dict]:
    """The conversation's topics and small-talk turns as the scorer reads them."""
    topics = []
    for t in g["topics"]:
        ev = {scorer.dia(x) for x in t["evidence"]} - {None}
        topics.append({**t, "_ev": ev, "_near": scorer.near(ev)})
    phatic: dict = {}
    for p in g.get("phatic", []):
        for x in p["evidence"]:
            d = scorer.dia(x)
            if d:
                phatic.setdefault(d, p.get("category") or p["pattern"])
    return topics, phatic


def mentions(entries) -> tuple[dict, dict, dict]:
    """Per speaker and word, the sessions they say it in and ask about it in (small talk
    included: a question about the listener is left out of distill), and how often each word
    is written as a name."""
    said: dict = defaultdict(lambda: defaultdict(set))
    asked: dict = defaultdict(lambda: defaultdict(set))
    names: dict = defaultdict(int)
    for e in entries:
        who = terms.speaker_of(e).lower()
        session = next((t for t in e.tags if t.startswith("session-")), e.id)
        for sentence in _SENTENCE_RE.split(terms._unlabelled(e.body)):
            for t in set(terms.content_terms(sentence)):
                said[who][t].add(session)
                if sentence.strip().endswith("?"):
                    asked[who][t].add(session)
            for word in sentence.split()[1:]:
                if word[:1].isupper() and word.strip(".,!?\"'").isalpha():
                    for t in terms.content_terms(word):
                        names[t] += 1
    return said, asked, names


def clusters(scorer, conv: str, g: dict, rows: list[dict], now: datetime, params: dict) -> list[dict]:
    """Every term cluster of one conversation with its features and its score."""
    topics, phatic = gold_of(scorer, g)
    entries = bench.entries_of(rows)
    found = set()
    for c in find_patterns(entries, now=now, **params).candidates:
        topic, _n, chat = scorer.score_candidate(list(c.members), topics, phatic, conv)
        if topic and not chat:
            found.add(topic)
    docs = terms.prepare(entries, now=now, window_days=params["window_days"])[0]
    said, asked, names = mentions(entries)
    speakers = sorted({d.speaker for d in docs})
    held: dict = defaultdict(list)
    for i, d in enumerate(docs):
        for t in d.counts:
            if t[0] not in "@#":
                held[(d.speaker, t)].append(i)
    out = []
    for (who, t), idx in held.items():
        days = {docs[i].day for i in idx}
        if len(days) < 3:
            continue
        other = next((s for s in speakers if s != who), "")
        members = [docs[i].entry.id for i in idx]
        topic, _n, chat = scorer.score_candidate(members, topics, phatic, conv)
        hit = bool(topic and not chat)
        out.append(dict(conv=conv, speaker=who, term=t, days=len(days), n=len(idx), members=members,
                        hit=hit, topic=topic, new=hit and topic not in found, small_talk=bool(chat),
                        other_said=len(said[other][t]), other_asked=len(asked[other][t]), name=names[t]))
    total: dict = defaultdict(int)
    for c in out:
        total[c["term"]] += c["n"]
    for c in out:
        c["own"] = c["n"] / total[c["term"]]
    return out


def report(all_clusters: list[dict]) -> None:
    rows = [("all", lambda c: True)]
    rows += [(f"the other speaker says it in >= {k} sessions", lambda c, k=k: c["other_said"] >= k) for k in (1, 2, 3, 4)]
    rows += [(f"the other speaker asks about it in >= {k} sessions", lambda c, k=k: c["other_asked"] >= k) for k in (1, 2, 3)]
    rows += [(f"a name, >= {k} times", lambda c, k=k: c["name"] >= k) for k in (2, 3, 5)]
    rows += [("the speaker holds >= 0.75", lambda c: c["own"] >= 0.75)]
    rows += [(f"... and the other asks in >= {k} sessions", lambda c, k=k: c["own"] >= 0.75 and c["other_asked"] >= k)
             for k in (1, 2)]
    print("| feature | clusters | hits | small talk | topics not yet found |\n|---|---:|---:|---:|---:|")
    for label, keep in rows:
        sel = [c for c in all_clusters if keep(c)]
        hits = sum(c["hit"] for c in sel) / len(sel) if sel else 0.0
        new = len({(c["conv"], c["topic"]) for c in sel if c["new"]})
        print(f"| {label} | {len(sel)} | {hits:.2f} | {sum(c['small_talk'] for c in sel)} | {new} |")


def build(scorer, gold: dict, rows: dict, found: dict, now: datetime, params: dict, asked: int) -> None:
    """The shipped candidates, with the free places under the cap filled by the speaker's own
    words the other speaker asks about (most days first; a cluster half inside a candidate is
    skipped), scored per conversation."""
    per = {}
    for conv in gold:
        cands = [list(c.members) for c in find_patterns(bench.entries_of(rows[conv]), now=now, **params).candidates]
        covered = {m for c in cands for m in c}
        best = sorted((c for c in found[conv] if c["own"] >= 0.75 and c["other_asked"] >= asked),
                      key=lambda c: (-c["days"], c["term"]))
        for c in best:
            if len(cands) >= params["max_per_subject"]:
                break
            if 2 * sum(m in covered for m in c["members"]) >= len(c["members"]):
                continue
            cands.append(c["members"])
            covered.update(c["members"])
        per[conv] = bench.score_conv(scorer, gold, conv, [("", "", m) for m in cands])
    bench.print_folds(per, f"shipped candidates + term clusters asked about in >= {asked} sessions")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shared", default=os.environ.get("MEMREPO_SHARED_BENCH")
                    or str(bench.ROOT.parent / "shared" / "bench"))
    ap.add_argument("--asked", type=int, default=2, help="sessions the other speaker asks about the word in")
    a = ap.parse_args(argv)
    shared = Path(a.shared)
    gold_file = shared / "distill" / "locomo-distill-gold-dev.json"
    if not gold_file.exists():
        sys.exit(f"{gold_file} not found: point --shared (or MEMREPO_SHARED_BENCH) at the folder holding the "
                 "LoCoMo distill gold and its scorer (not part of this repository)")
    scorer = bench.load_scorer(shared)
    gold = json.loads(gold_file.read_text(encoding="utf-8"))
    now = datetime.fromisoformat(bench.NOW).replace(tzinfo=UTC)
    params = {k: v for k, v in {**DEFAULTS["distill"], "window_days": bench.WINDOW_DAYS}.items() if k in PARAMS}
    with tempfile.TemporaryDirectory(prefix="memrepo-clusters-") as tmp:
        rows = bench.rows_by_conv(bench.convert(shared, Path(tmp)))
    found = {conv: clusters(scorer, conv, g, rows[conv], now, params) for conv, g in gold.items()}
    report([c for cs in found.values() for c in cs])
    build(scorer, gold, rows, found, now, params, a.asked)
    return 0


if __name__ == "__main__":
    sys.exit(main())
