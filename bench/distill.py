#!/usr/bin/env python3
"""Distill quality on the LoCoMo dev conversations: recurring facts found, small talk left out.

  .venv/bin/python bench/distill.py [--strict] [--convs conv-26,conv-30] [-v] [--dump FILE] [--folds]
  .venv/bin/python bench/distill.py --in-process [--set similarity=0.25 ...] [--choose KEY=V1,V2,...]

Runs the shared scorer (``../shared/bench/distill/distill_eval.py``, read at run time, never
copied) through the product: the shared converter turns ``../shared/bench/data/locomo-dev.json``
(the public LoCoMo benchmark's first five conversations) into import JSONL in a temporary
directory, and the scorer builds one fresh vault per conversation with this checkout's
``memrepo`` (``.venv/bin/memrepo``), imports the turns and runs ``memrepo distill --dry-run
--json``. It prints the scorer's table and its last line ``precision=.. recall=.. candidates=N
topics=M phatic=K``; ``--strict`` (the figure reported) refuses a hit to a candidate made mostly
of small-talk turns. Override the shared folder with ``--shared`` or ``MEMREPO_SHARED_BENCH``;
without it (the data is not part of this repository) the script says where to put it and stops.

``--folds`` adds one row per conversation (each a fold: leave one conversation out) and the
fold mean of precision, recall and small-talk candidates, strict scoring. ``--in-process`` calls
:func:`memrepo.lifecycle.distill.find_patterns` directly on the same entries a vault gives it
(checked against the product: identical candidates at the defaults), which allows ``--set
KEY=VALUE`` (any keyword of ``find_patterns``) and ``--choose KEY=V1,V2,...``: for each held-out
conversation the value best on the other four (the most recall among values with precision
>= 0.9 and no small-talk candidate there), scored on the held-out one.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOW = "2025-12-31"           # as the scorer runs distill: a window that covers every conversation
WINDOW_DAYS = 4000
MIN_PRECISION = 0.9          # a choice must keep this precision on the training conversations


def load_scorer(shared: Path):
    spec = importlib.util.spec_from_file_location("distill_eval", shared / "distill" / "distill_eval.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def convert(shared: Path, tmp: Path) -> Path:
    jsonl = tmp / "locomo-dev.jsonl"
    subprocess.run([sys.executable, str(shared / "to_jsonl.py"), "locomo", str(shared / "data" / "locomo-dev.json"),
                    "--out", str(jsonl), "--queries", str(tmp / "q.jsonl")], check=True, stderr=subprocess.DEVNULL)
    return jsonl


def rows_by_conv(jsonl: Path) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for line in jsonl.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out.setdefault(str(row["subject"]), []).append(row)
    return out


# ---------------------------------------------------------------- scoring per fold ---

def score_conv(scorer, gold: dict, conv: str, cands: list[tuple[str, str, list[str]]]) -> dict:
    """Strict figures of one conversation (the scorer's own rule, :func:`score_candidate`)."""
    g = gold[conv]
    topics = []
    for t in g["topics"]:
        ev = {scorer.dia(x) for x in t["evidence"]} - {None}
        topics.append({**t, "_ev": ev, "_near": scorer.near(ev)})
    phatic_of = {}
    for p in g.get("phatic", []):
        for x in p["evidence"]:
            d = scorer.dia(x)
            if d:
                phatic_of.setdefault(d, p.get("category") or p["pattern"])
    hits, small_talk, found = 0, 0, set()
    for _cid, _summary, members in cands:
        topic, _n, phatic = scorer.score_candidate(members, topics, phatic_of, conv)
        small_talk += phatic is not None
        if topic and phatic is None:
            hits += 1
            found.add(topic)
    n = len(cands)
    return {"candidates": n, "hits": hits, "precision": hits / n if n else None,
            "topics": len(topics), "found": len(found), "recall": len(found) / len(topics),
            "small_talk": small_talk}


def fold_mean(per: dict[str, dict]) -> dict:
    """Unweighted mean over conversations (a conversation without candidates has no precision)."""
    precisions = [r["precision"] for r in per.values() if r["precision"] is not None]
    return {"candidates": sum(r["candidates"] for r in per.values()),
            "precision": sum(precisions) / len(precisions) if precisions else None,
            "recall": sum(r["recall"] for r in per.values()) / len(per),
            "small_talk": sum(r["small_talk"] for r in per.values()),
            "pooled_precision": (sum(r["hits"] for r in per.values()) / max(1, sum(r["candidates"] for r in per.values()))),
            "pooled_recall": sum(r["found"] for r in per.values()) / sum(r["topics"] for r in per.values())}


def print_folds(per: dict[str, dict], title: str, chosen: dict[str, str] | None = None) -> dict:
    mean = fold_mean(per)
    fmt = lambda x: "n/a" if x is None else f"{x:.2f}"  # noqa: E731
    print(f"\n## {title}: per conversation (fold) and fold mean, strict")
    print("| fold | " + ("chosen | " if chosen else "") + "candidates | precision | small-talk | recall |")
    print("|---|" + ("---|" if chosen else "") + "---:|---:|---:|---:|")
    for conv, r in per.items():
        extra = [chosen[conv]] if chosen else []
        print(f"| {conv} | " + " | ".join(extra + [str(r["candidates"]), fmt(r["precision"]), str(r["small_talk"]),
                                                   f"{r['found']}/{r['topics']} = {r['recall']:.2f}"]) + " |")
    extra = [""] if chosen else []
    print("| **mean** | " + " | ".join(extra + [str(mean["candidates"]), fmt(mean["precision"]), str(mean["small_talk"]),
                                               f"{mean['recall']:.2f}"]) + " |")
    print(f"distill fold mean: precision {fmt(mean['precision'])}, recall {mean['recall']:.2f}, "
          f"small-talk candidates {mean['small_talk']} (pooled: precision {mean['pooled_precision']:.2f}, "
          f"recall {mean['pooled_recall']:.2f})")
    return mean


# ---------------------------------------------------------------- in-process ---

def entries_of(rows: list[dict]):
    """The entries a vault gives distill for these imported rows (``distill_run._entries``)."""
    from memrepo.lifecycle.distill import Entry
    return [Entry(id=r["id"], created=str(r.get("created", "")), session=r.get("session"),
                  subject=str(r.get("subject", "")), fact=r.get("fact"), kind=str(r.get("kind", "")),
                  summary=str(r.get("summary", "")), body=r.get("body", ""), tags=tuple(r.get("tags", ())),
                  links=tuple(r.get("links", ())), author=r.get("author")) for r in rows]


def distill_in_process(rows: list[dict], settings: dict) -> list[tuple[str, str, list[str]]]:
    from memrepo.config import DEFAULTS
    from memrepo.lifecycle.distill import find_patterns
    params = {**DEFAULTS["distill"], "window_days": WINDOW_DAYS}
    params = {k: v for k, v in params.items() if k in ("window_days", "min_occurrences", "count_by", "similarity",
                                                       "common_day_share", "max_per_subject", "max_per_run")}
    now = datetime.fromisoformat(NOW).replace(tzinfo=UTC)
    result = find_patterns(entries_of(rows), now=now, **{**params, **settings})
    return [(c.id, c.summary, list(c.members)) for c in result.candidates]


def parse_value(text: str):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)


def grid(items: list[str]) -> dict[str, dict]:
    out: dict[str, dict] = {"": {}}
    for item in items:
        key, _, values = item.partition("=")
        out = {f"{label} {key}={v}".strip(): {**s, key: parse_value(v)} for label, s in out.items()
               for v in values.split(",")}
    return out


def admissible_key(per: dict[str, dict], train: list[str]) -> tuple:
    """What a choice maximises on the training conversations: first precision >= 0.9 and no
    small-talk candidate, then the mean recall, then the mean precision."""
    rows = [per[c] for c in train]
    precisions = [r["precision"] for r in rows if r["precision"] is not None]
    precision = sum(precisions) / len(precisions) if precisions else 0.0
    clean = precision >= MIN_PRECISION and not any(r["small_talk"] for r in rows)
    return (clean, sum(r["recall"] for r in rows) / len(rows), precision)


def choose(runs: dict[str, dict[str, dict]]) -> tuple[dict[str, dict], dict[str, str]]:
    labels = list(runs)
    convs = list(runs[labels[0]])
    per, chosen = {}, {}
    for held in convs:
        train = [c for c in convs if c != held]
        best = max(labels, key=lambda lb: (admissible_key(runs[lb], train), -labels.index(lb)))
        per[held], chosen[held] = runs[best][held], best
    return per, chosen


def run_in_process(a, shared: Path, gold: dict, jsonl: Path) -> int:
    scorer = load_scorer(shared)
    rows = rows_by_conv(jsonl)
    convs = a.convs.split(",") if a.convs else [c for c in gold if c in rows]
    base = {k: parse_value(v) for k, _, v in (s.partition("=") for s in a.set)}
    settings = {label: {**base, **s} for label, s in grid(a.choose).items()}
    runs: dict[str, dict[str, dict]] = {}
    for label, s in settings.items():
        runs[label] = {c: score_conv(scorer, gold, c, distill_in_process(rows[c], s)) for c in convs}
        if a.choose:
            m = fold_mean(runs[label])
            print(f"  {label or 'defaults'}: (all dev, for orientation only) precision "
                  f"{m['precision'] or 0:.2f} recall {m['recall']:.2f} small-talk {m['small_talk']}")
    title = f"distill, in-process{' ' + ' '.join(a.set) if a.set else ''}"
    if a.choose:
        per, chosen = choose(runs)
        print_folds(per, f"{title}; --choose {' '.join(a.choose)}, each fold scored with the value chosen on the others",
                    chosen)
    else:
        print_folds(runs[""], title)
    return 0


# ---------------------------------------------------------------- through the product ---

def run_product(a, shared: Path, gold: dict, jsonl: Path, tmp: Path) -> int:
    exe = ROOT / ".venv" / "bin" / "memrepo"
    if not exe.exists():
        sys.exit(f"{exe} not found: run 'make install' first")
    dump = Path(a.dump) if a.dump else tmp / "dump.json"
    cmd = [sys.executable, str(shared / "distill" / "distill_eval.py"), str(shared / "distill" / "locomo-distill-gold-dev.json"),
           str(jsonl), "--memrepo", str(exe), "--dump", str(dump)]
    cmd += ["--strict"] * a.strict + ["-v"] * a.verbose
    cmd += ["--convs", a.convs] if a.convs else []
    env = {**os.environ, "PATH": f"{exe.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    code = subprocess.run(cmd, env=env).returncode
    if code == 0 and a.folds:
        scorer = load_scorer(shared)
        records = json.loads(dump.read_text(encoding="utf-8"))
        convs = a.convs.split(",") if a.convs else [c for c in gold if c in rows_by_conv(jsonl)]
        per = {c: score_conv(scorer, gold, c, [(r["id"], r["summary"], r["members"]) for r in records
                                               if r["conv"] == c]) for c in convs}
        print_folds(per, "distill through the product")
    return code


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shared", default=os.environ.get("MEMREPO_SHARED_BENCH") or str(ROOT.parent / "shared" / "bench"))
    ap.add_argument("--strict", action="store_true")
    ap.add_argument("--convs")
    ap.add_argument("--dump")
    ap.add_argument("--folds", action="store_true", help="one row per conversation and the fold mean")
    ap.add_argument("--in-process", action="store_true", help="call find_patterns directly (allows --set, --choose)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--choose", action="append", default=[], metavar="KEY=V1,V2,...")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    if (a.set or a.choose) and not a.in_process:
        ap.error("--set and --choose need --in-process (the product runs the vault's configuration)")
    shared = Path(a.shared)
    scorer, gold_file = shared / "distill" / "distill_eval.py", shared / "distill" / "locomo-distill-gold-dev.json"
    if not scorer.exists():
        sys.exit(f"{scorer} not found: point --shared (or MEMREPO_SHARED_BENCH) at the folder holding the "
                 "LoCoMo distill gold and its scorer (not part of this repository)")
    gold = json.loads(gold_file.read_text(encoding="utf-8"))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memrepo-distill-bench-") as tmp:
        jsonl = convert(shared, Path(tmp))
        code = (run_in_process(a, shared, gold, jsonl) if a.in_process
                else run_product(a, shared, gold, jsonl, Path(tmp)))
    print(f"wall {time.perf_counter() - started:.1f}s on {os.cpu_count()} cores")
    return code


if __name__ == "__main__":
    sys.exit(main())
