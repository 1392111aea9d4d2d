"""Retrieval quality of memrepo's search on the dev benchmarks (LoCoMo, MADial-zh).

    .venv/bin/python bench/retrieval.py [--bench ../shared/bench] [--only locomo|madial]
        [--keywords] [--per-query-out DIR] [--json-out F]
    .venv/bin/python bench/retrieval.py --in-process [--semantic --vectors-dir DIR]
        [--set neighbour=0.3 --set prf_docs=3 ...] [--sweep mix_general=0.3,0.45,0.6]
    .venv/bin/python bench/retrieval.py --folds [--in-process --semantic ...]
    .venv/bin/python bench/retrieval.py --in-process --semantic --choose neighbour=0.3,0.2,0.5

Converts the raw data with the kit's ``to_jsonl.py`` into a temporary folder (the data is
never copied into this repository). By default it goes through the product, as a user
would: ``memrepo init`` a vault per benchmark, ``memrepo import`` the memories (one commit),
then one ``memrepo search --queries FILE --json`` process for all questions (each line
``{"qid", "query", "subject", "limit"}``; the subject is the conversation or user), and
scores the ranked ids with the kit's own ``recall_at_k.py`` functions. The product ranks
hybrid (keywords + vectors) as shipped; ``--keywords`` runs it with MEMREPO_SEMANTIC=0.

``--in-process`` indexes the converted memories with ``MemoryIndex`` directly and runs the
queries in this process; only this mode takes ``--set FIELD=VALUE`` to override a
:class:`memrepo.retrieval.ranking.Tuning` field (ablations). Both modes give the same ranking with the
default tuning. ``--semantic`` adds the vectors (kept in ``--vectors-dir`` between runs, so
a sweep encodes nothing twice).

``--folds`` reports each fold and the fold mean (``bench/folds.py``: leave one LoCoMo
conversation out; four blocks of MADial dialogues), per category for LoCoMo: the figures to
expect on data nobody tuned on. ``--choose FIELD=V1,V2,...`` (in-process, repeatable: a grid)
re-chooses a constant the honest way: for each held-out fold the value best on the *other*
folds, scored on the held-out one (list the shipped value first: ties keep it).

The data is the benchmark kit's: the dev halves of the public LoCoMo and MADial-Bench
benchmarks (and its synthetic generator ``synth.py``), read at run time from ``../shared/bench``
beside the project and never copied in (their licences keep them out of this repository).
When the kit is absent the bench says where it looked and stops: pass ``--bench DIR``.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import folds  # noqa: E402  (bench/folds.py, beside this script)

from memrepo.retrieval.fields import IndexDoc
from memrepo.retrieval.index import MemoryIndex
from memrepo.retrieval.ranking import SearchQuery, Tuning

DEFAULT_BENCH = Path(__file__).resolve().parents[2] / "shared" / "bench"
SETS = {
    "locomo": (["locomo", "data/locomo-dev.json"], "1,5,10"),
    "madial": (["madial", "data/madial-zh-memory.json", "data/madial-zh-dialogue-dev.json"],
               "1,3,5,10"),
}


def kit_file(bench: Path, name: str) -> Path:
    """A file of the benchmark kit, or a clear stop: the kit is not part of this repository."""
    path = bench / name
    if not path.exists():
        raise SystemExit(f"bench: {path} is absent: the benchmark kit (the LoCoMo and MADial-Bench dev halves, "
                         "synth.py) is read from beside the project; pass --bench DIR (the folder holding it)")
    return path


def load_kit(bench: Path):
    spec = importlib.util.spec_from_file_location("recall_at_k", kit_file(bench, "recall_at_k.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def convert(bench: Path, name: str, out: Path) -> tuple[Path, Path]:
    args, _ = SETS[name]
    mem, qry = out / f"{name}.memories.jsonl", out / f"{name}.queries.jsonl"
    cmd = [sys.executable, str(kit_file(bench, "to_jsonl.py")), args[0],
           *[str(kit_file(bench, a)) for a in args[1:]], "--out", str(mem), "--queries", str(qry)]
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


class _CachedQueries:
    """An encoder that remembers query vectors (a sweep runs the same queries many times)."""

    def __init__(self, encoder) -> None:
        self.encoder, self.memo = encoder, {}

    def query(self, text: str):
        if text not in self.memo:
            self.memo[text] = self.encoder.query(text)
        return self.memo[text]

    def queries_soon(self, texts):
        """The search's way of asking (each vector taken with ``.result()``)."""
        return {text: _Known(self.query(text)) for text in texts}


class _Known:
    def __init__(self, vector) -> None:
        self.vector = vector

    def result(self):
        return self.vector


def run_set(kit, bench: Path, name: str, work: Path, tunings: list[Tuning], pq_dir: Path | None,
            semantic: bool = False, vectors_dir: Path | None = None,
            quiet: bool = False) -> tuple[list[dict], list[list[list[str]]]]:
    """In-process: MemoryIndex directly (for ``--set`` ablations, ``--sweep`` and ``--choose``).
    Returns the questions and, per tuning, every question's ranked ids."""
    mem, qry = convert(bench, name, work)
    memories = read_jsonl(mem)
    ix = MemoryIndex(work / f"{name}.index", tuning=tunings[0])
    t0 = time.perf_counter()
    ix.rebuild((to_doc(m) for m in memories), commit=None)
    build = time.perf_counter() - t0
    sem = None
    if semantic:
        from memrepo.retrieval import embed
        from memrepo.retrieval.vectors import VectorStore
        store = VectorStore((vectors_dir or work) / f"{name}.vectors")
        t0 = time.perf_counter()
        store.rebuild([to_doc(m) for m in memories], embed.shared(), commit=None)
        print(f"vectors: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        sem = (store.load(), _CachedQueries(embed.shared()))
    queries = read_jsonl(qry)
    ks = [int(k) for k in SETS[name][1].split(",")]
    runs = []
    for tuning in tunings:
        ix.tuning = tuning
        results, lat = [], []
        for q in queries:
            t = time.perf_counter()
            res = ix.search(SearchQuery(q["question"], limit=max(ks), subject=q["conversation"]), semantic=sem)
            lat.append(time.perf_counter() - t)
            results.append([h.id for h in res.hits])
        runs.append(results)
        if not quiet:
            label = "hybrid" if semantic else "keywords"
            kit.print_table(kit.score(queries, results, ks), ks, f"memrepo search (in-process, {label}"
                            f"{' ' + str(changed(tuning)) if changed(tuning) else ''}): "
                            f"{name} dev (index build {build:.1f} s)", lat)
        if pq_dir:
            write_per_query(pq_dir / f"{name}.jsonl", queries, results)
    return queries, runs


def changed(tuning: Tuning) -> dict:
    """The fields of ``tuning`` that differ from the shipped defaults."""
    return {f.name: getattr(tuning, f.name) for f in dataclasses.fields(tuning)
            if getattr(tuning, f.name) != getattr(Tuning(), f.name)}


PRODUCT_ENV: dict[str, str] = {"MEMREPO_DAEMON": "0"}  # each CLI call its own process (no background server)


def memrepo_cli(*args: str, cwd: Path) -> str:
    import os
    exe = Path(sys.executable).with_name("memrepo")
    out = subprocess.run([str(exe), *args], cwd=cwd, capture_output=True, text=True,
                         env={**os.environ, **PRODUCT_ENV})
    if out.returncode:
        raise SystemExit(f"memrepo {' '.join(args[:2])} failed ({out.returncode}): {out.stderr.strip()}")
    return out.stdout


def run_product(kit, bench: Path, name: str, work: Path, pq_dir: Path | None) -> tuple[list[dict], list[list[str]]]:
    """Through the product: memrepo init + import, one batch search process, kit scoring."""
    mem, qry = convert(bench, name, work)
    vault = work / f"vault-{name}"
    memrepo_cli("init", str(vault), cwd=work)
    t0 = time.perf_counter()
    memrepo_cli("import", str(mem), cwd=vault)
    memrepo_cli("reindex", "--wait", cwd=vault)
    build = time.perf_counter() - t0
    queries = read_jsonl(qry)
    ks = [int(k) for k in SETS[name][1].split(",")]
    batch = work / f"{name}.batch.jsonl"
    batch.write_text("".join(
        json.dumps({"qid": q["qid"], "query": q["question"], "subject": q["conversation"],
                    "limit": max(ks)}, ensure_ascii=False) + "\n" for q in queries), encoding="utf-8")
    t0 = time.perf_counter()
    out = memrepo_cli("search", "--queries", str(batch), "--json", cwd=vault)
    elapsed = time.perf_counter() - t0
    by_qid = {}
    for line in out.splitlines():
        if line.strip():
            rec = json.loads(line)
            by_qid[rec["qid"]] = [h["id"] for h in rec["hits"]]
    missing = [q["qid"] for q in queries if q["qid"] not in by_qid]
    if missing:
        raise SystemExit(f"{name}: no output for {len(missing)} queries, e.g. {missing[:3]}")
    results = [by_qid[q["qid"]] for q in queries]
    table = kit.score(queries, results, ks)
    mode = "keywords" if PRODUCT_ENV.get("MEMREPO_SEMANTIC") == "0" else "hybrid"
    kit.print_table(table, ks, f"memrepo search --queries (product, {mode}): {name} dev "
                    f"(import + reindex {build:.1f} s; {len(queries)} queries in one process "
                    f"{elapsed:.1f} s, {1000 * elapsed / len(queries):.1f} ms each)", None)
    if pq_dir:
        write_per_query(pq_dir / f"{name}.jsonl", queries, results)
    return queries, results


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


def parse_value(base: Tuning, key: str, value: str):
    """``value`` as the type of ``Tuning.<key>``."""
    current = getattr(base, key)
    if isinstance(current, bool):
        return value.lower() in ("1", "true", "yes", "on")
    if isinstance(current, tuple):
        return eval(value)
    return type(current)(value)


def parse_sets(items: list[str]) -> Tuning:
    base = Tuning()
    changes = {}
    for item in items:
        key, _, value = item.partition("=")
        changes[key] = parse_value(base, key, value)
    return dataclasses.replace(base, **changes)


def grid(base: Tuning, items: list[str]) -> dict[str, Tuning]:
    """Every combination of the ``FIELD=V1,V2,...`` values, labelled, the first of each first."""
    out = {"": base}
    for item in items:
        key, _, values = item.partition("=")
        out = {f"{label} {key}={v}".strip(): dataclasses.replace(t, **{key: parse_value(base, key, v)})
               for label, t in out.items() for v in values.split(",")}
    return out


def report_folds(kit, name: str, queries: list[dict], results: list[list[str]], title: str) -> dict:
    """Per fold and fold mean of one ranking (the shipped one, or one ``--set``)."""
    ks = [int(k) for k in SETS[name][1].split(",")]
    mean = folds.print_folds(folds.fold_tables(kit, name, queries, results, ks), name, title, ks)
    print(folds.summary_line(name, mean))
    return mean


def report_choice(kit, name: str, queries: list[dict], runs: dict[str, list[list[str]]], title: str) -> dict:
    """The nested choice of ``--choose``: per held-out fold the value chosen on the others."""
    ks = [int(k) for k in SETS[name][1].split(",")]
    for label, results in runs.items():   # orientation only: these means saw every fold
        mean = folds.mean_table(folds.fold_tables(kit, name, queries, results, ks))
        print(f"  {label}: fold mean over all folds {folds.summary_line(name, mean).split(': ', 1)[1]}")
    chosen = folds.choose(kit, name, queries, runs, ks)
    tables = {fold: c["table"] for fold, c in chosen.items()}
    labels = {fold: c["chosen"] + ("" if c["admissible"] else f" (chosen on {c['train_n']} < "
                                   f"{folds.MIN_TRAIN} questions: not admissible)") for fold, c in chosen.items()}
    mean = folds.print_folds(tables, name, title + ", each fold scored with the value chosen on the others",
                             ks, labels=labels)
    print(folds.summary_line(name, mean))
    return {"chosen": labels, "mean": mean}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    ap.add_argument("--only", choices=sorted(SETS))
    ap.add_argument("--in-process", action="store_true",
                    help="index and search with MemoryIndex in this process (allows --set)")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    ap.add_argument("--sweep", metavar="FIELD=V1,V2,...", help="in-process: one run per value")
    ap.add_argument("--folds", action="store_true",
                    help="also report each fold and the fold mean (leave one conversation out)")
    ap.add_argument("--choose", action="append", default=[], metavar="FIELD=V1,V2,...",
                    help="in-process: per held-out fold, the value best on the other folds (implies --folds)")
    ap.add_argument("--semantic", action="store_true", help="in-process: hybrid ranking with vectors")
    ap.add_argument("--keywords", action="store_true",
                    help="product: keyword ranking only (MEMREPO_SEMANTIC=0), the side-by-side baseline")
    ap.add_argument("--vectors-dir", type=Path, help="in-process: keep the vectors here between runs")
    ap.add_argument("--per-query-out", type=Path)
    ap.add_argument("--json-out", type=Path, help="write the per-category tables as JSON")
    args = ap.parse_args(argv)
    if (args.set or args.sweep or args.semantic or args.choose) and not args.in_process:
        ap.error("--set, --sweep, --choose and --semantic need --in-process (the product runs the default tuning)")
    if args.sweep and args.choose:
        ap.error("--sweep and --choose are two ways to vary a constant: use one")
    if args.keywords:
        PRODUCT_ENV["MEMREPO_SEMANTIC"] = "0"
    kit = load_kit(args.bench)
    tuning = parse_sets(args.set)
    tunings = {"": tuning}
    if args.sweep:
        tunings = grid(tuning, [args.sweep])
    if args.choose:
        tunings = grid(tuning, args.choose)
    out: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="memrepo-bench-") as tmp:
        for name in ([args.only] if args.only else list(SETS)):
            ks = [int(k) for k in SETS[name][1].split(",")]
            if args.in_process:
                queries, runs = run_set(kit, args.bench, name, Path(tmp), list(tunings.values()),
                                        args.per_query_out, args.semantic, args.vectors_dir,
                                        quiet=bool(args.choose))
                mode = f"in-process, {'hybrid' if args.semantic else 'keywords'}"
            else:
                queries, results = run_product(kit, args.bench, name, Path(tmp), args.per_query_out)
                runs = [results]
                mode = f"product, {'keywords' if args.keywords else 'hybrid'}"
            out[name] = {"pooled": [kit.score(queries, r, ks) for r in runs]}
            if args.choose:
                out[name]["choice"] = report_choice(kit, name, queries, dict(zip(tunings, runs)),
                                                    f"{name} dev ({mode}; --choose {' '.join(args.choose)})")
            elif args.folds:
                out[name]["folds"] = [report_folds(kit, name, queries, r, f"{name} dev ({mode}{' ' + label if label else ''})")
                                      for label, r in zip(tunings, runs)]
    if args.json_out:
        args.json_out.write_text(json.dumps(out, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
