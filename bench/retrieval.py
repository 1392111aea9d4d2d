"""Retrieval quality of memrepo's search on the dev benchmarks (LoCoMo, MADial-zh).

    .venv/bin/python bench/retrieval.py [--bench ../shared/bench] [--only locomo|madial]
        [--set neighbour=0.3 --set prf_docs=3 ...] [--per-query-out DIR]

Converts the raw data with the kit's ``to_jsonl.py`` into a temporary folder (the data is
never copied into this repository), indexes the memories through ``IndexDoc``, runs every
query in-process with its subject as filter, and scores the ranked ids with the kit's own
``recall_at_k.py`` metrics. ``--set`` overrides a :class:`memrepo.index.Tuning` field.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from memrepo.index import IndexDoc, MemoryIndex, SearchQuery, Tuning

DEFAULT_BENCH = Path(__file__).resolve().parents[2] / "shared" / "bench"
SETS = {
    "locomo": (["locomo", "data/locomo-dev.json"], "1,5,10"),
    "madial": (["madial", "data/madial-zh-memory.json", "data/madial-zh-dialogue-dev.json"],
               "1,3,5,10"),
}


def load_kit(bench: Path):
    spec = importlib.util.spec_from_file_location("recall_at_k", bench / "recall_at_k.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def convert(bench: Path, name: str, out: Path) -> tuple[Path, Path]:
    args, _ = SETS[name]
    mem, qry = out / f"{name}.memories.jsonl", out / f"{name}.queries.jsonl"
    cmd = [sys.executable, str(bench / "to_jsonl.py"), args[0],
           *[str(bench / a) for a in args[1:]], "--out", str(mem), "--queries", str(qry)]
    subprocess.run(cmd, check=True, capture_output=True)
    return mem, qry


def to_doc(m: dict) -> IndexDoc:
    return IndexDoc(id=m["id"], path=f"memories/{m.get('layer', 'L1')}/{m['id']}.md",
                    layer=m.get("layer", "L1"), kind=m.get("kind", "event"),
                    subject=m["subject"], fact=m.get("fact"), status=m.get("status", "active"),
                    summary=m.get("summary", ""), body=m.get("body", ""),
                    tags=tuple(m.get("tags", ())), created=m.get("created"),
                    updated=m.get("updated"), links=tuple(m.get("links", ())))


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def run_set(kit, bench: Path, name: str, work: Path, tuning: Tuning, pq_dir: Path | None) -> dict:
    mem, qry = convert(bench, name, work)
    ix = MemoryIndex(work / f"{name}.index", tuning=tuning)
    t0 = time.perf_counter()
    ix.rebuild((to_doc(m) for m in read_jsonl(mem)), commit=None)
    build = time.perf_counter() - t0
    queries = read_jsonl(qry)
    ks = [int(k) for k in SETS[name][1].split(",")]
    results, lat = [], []
    for q in queries:
        t = time.perf_counter()
        res = ix.search(SearchQuery(q["question"], limit=max(ks), subject=q["conversation"]))
        lat.append(time.perf_counter() - t)
        results.append([h.id for h in res.hits])
    table = kit.score(queries, results, ks)
    kit.print_table(table, ks, f"memrepo search: {name} dev (index build {build:.1f} s)", lat)
    if pq_dir:
        write_per_query(pq_dir / f"{name}.jsonl", queries, results)
    return table


def write_per_query(path: Path, queries: list[dict], results: list[list[str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for q, ids in zip(queries, results):
            gold = set(q["evidence"])
            fh.write(json.dumps({"qid": q["qid"], "category": q["category"],
                                 "question": q["question"], "evidence": q["evidence"],
                                 "retrieved": ids,
                                 "hit_ranks": [i + 1 for i, r in enumerate(ids) if r in gold]},
                                ensure_ascii=False) + "\n")


def parse_sets(items: list[str]) -> Tuning:
    base = Tuning()
    changes = {}
    for item in items:
        key, _, value = item.partition("=")
        current = getattr(base, key)
        changes[key] = type(current)(value) if not isinstance(current, tuple) else eval(value)
    return dataclasses.replace(base, **changes)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    ap.add_argument("--only", choices=sorted(SETS))
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    ap.add_argument("--per-query-out", type=Path)
    args = ap.parse_args(argv)
    kit = load_kit(args.bench)
    tuning = parse_sets(args.set)
    with tempfile.TemporaryDirectory(prefix="memrepo-bench-") as tmp:
        for name in ([args.only] if args.only else list(SETS)):
            run_set(kit, args.bench, name, Path(tmp), tuning, args.per_query_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
