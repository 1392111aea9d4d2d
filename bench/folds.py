"""Cross-validation folds for the dev benchmarks: figures that hold on data nobody tuned on.

A figure measured on the same questions its constants were chosen on flatters the product.
These helpers split a benchmark's questions into folds and report each fold and their mean:

* LoCoMo: leave one conversation out (five dev conversations, five folds);
* MADial-Bench zh: four folds of the dev dialogues, in blocks of consecutive dialogue ids
  (``d0``-``d38``, ``d40``-``d78``, ...; both users in every block).

:func:`choose` is the one place a constant may be chosen from data: for each held-out fold it
picks the candidate value that scores best on the *other* folds and scores that value on the
held-out one, so the fold's figure never saw its own questions. A choice made on fewer than
:data:`MIN_TRAIN` questions is flagged (too few to tell a lever from noise).
"""
from __future__ import annotations

import re
from collections.abc import Sequence

MIN_TRAIN = 100   # questions a constant must be chosen on (fewer: flagged, not admissible)
CATEGORIES = ("1 multi-hop", "2 temporal", "3 open-domain", "4 single-hop")
HEADLINE = {"locomo": "overall (1-4)", "madial": "all"}
_DIALOGUE_RE = re.compile(r"-d(\d+)$")


def fold_of(name: str, query: dict) -> str:
    """The fold a question belongs to: its conversation (LoCoMo) or its block of dialogues (MADial)."""
    if name == "locomo":
        return str(query["conversation"])
    match = _DIALOGUE_RE.search(str(query["qid"]))
    if match is None:
        raise ValueError(f"{query['qid']}: not a MADial dialogue id (…-d<number>)")
    block = int(match.group(1)) // 40   # dev ids are even: 20 dialogues per block
    return f"d{block * 40}-d{block * 40 + 38}"


def split(name: str, queries: Sequence[dict], results: Sequence[list[str]]) -> dict[str, tuple[list, list]]:
    """``{fold: (queries, results)}`` in fold order."""
    out: dict[str, tuple[list, list]] = {}
    for q, r in zip(queries, results):
        qs, rs = out.setdefault(fold_of(name, q), ([], []))
        qs.append(q)
        rs.append(r)
    return dict(sorted(out.items(), key=lambda kv: _fold_key(kv[0])))


def _fold_key(fold: str) -> tuple:
    digits = re.findall(r"\d+", fold)
    return (int(digits[0]) if digits else 0, fold)


def fold_tables(kit, name: str, queries: Sequence[dict], results: Sequence[list[str]],
                ks: list[int]) -> dict[str, dict]:
    """The kit's per-group table for every fold."""
    return {fold: kit.score(qs, rs, ks) for fold, (qs, rs) in split(name, queries, results).items()}


def mean_table(tables: dict[str, dict]) -> dict:
    """The unweighted mean over folds of each group's metrics (a group a fold lacks is left out
    of that group's mean); ``n`` is the total."""
    groups: dict[str, list[dict]] = {}
    for table in tables.values():
        for group, row in table.items():
            groups.setdefault(group, []).append(row)
    out = {}
    for group, rows in groups.items():
        keys = [k for k in rows[0] if k != "n"]
        out[group] = {"n": sum(r["n"] for r in rows), "folds": len(rows),
                      **{k: sum(r[k] for r in rows) / len(rows) for k in keys}}
    return out


def objective(table: dict, name: str) -> float:
    """What a choice maximises: R@10 + MRR of the benchmark's headline group."""
    row = table[HEADLINE[name]]
    return row["R@10"] + row["MRR"]


def choose(kit, name: str, queries: Sequence[dict], runs: dict[str, list[list[str]]],
           ks: list[int]) -> dict[str, dict]:
    """Nested choice: for each held-out fold, the candidate (key of ``runs``, each the ranked
    ids of every question) with the best mean :func:`objective` over the *other* folds, and
    the held-out fold's table under it. Ties go to the first candidate (list the shipped
    value first)."""
    per = {label: fold_tables(kit, name, queries, results, ks) for label, results in runs.items()}
    folds = list(next(iter(per.values())))
    out = {}
    for held in folds:
        train = [f for f in folds if f != held]
        n_train = sum(per[next(iter(per))][f][HEADLINE[name]]["n"] for f in train)

        def score(label: str, train: list[str] = train) -> float:
            return sum(objective(per[label][f], name) for f in train) / len(train)
        best = max(runs, key=lambda label: (score(label), -list(runs).index(label)))
        out[held] = {"chosen": best, "train_n": n_train, "admissible": n_train >= MIN_TRAIN,
                     "table": per[best][held], "train_score": score(best)}
    return out


def print_folds(tables: dict[str, dict], name: str, title: str, ks: list[int],
                print_=print, labels: dict[str, str] | None = None) -> dict:
    """Each fold and the mean (per category for LoCoMo, R@10 and MRR); returns the mean table."""
    mean = mean_table(tables)
    print_(f"\n## {title}: per fold and fold mean")
    groups = [HEADLINE[name]] + (list(CATEGORIES) if name == "locomo" else [])
    cols = [f"R@{k}" for k in ks] + ["MRR"]
    head = "| fold | " + ("chosen | " if labels else "") + "n | " + " | ".join(cols)
    if name == "locomo":
        head += " | " + " | ".join(f"{g.split(' ', 1)[1]} R@10 / MRR" for g in CATEGORIES)
    print_(head + " |")
    print_("|---|" + ("---|" if labels else "") + "---:|" * (1 + len(cols) + (len(CATEGORIES) if name == "locomo" else 0)))
    for fold, table in [*tables.items(), ("**mean**", mean)]:
        row = table[groups[0]]
        cells = [str(row["n"])] + [f"{100 * row[c]:.1f}" for c in cols]
        for g in groups[1:]:
            r = table.get(g)
            cells.append(f"{100 * r['R@10']:.1f} / {100 * r['MRR']:.1f} (n={r['n']})" if r else "-")
        chosen = [labels.get(fold, "")] if labels else []
        print_(f"| {fold} | " + " | ".join(chosen + cells) + " |")
    return mean


def summary_line(name: str, mean: dict) -> str:
    """One line of the fold mean's headline figures."""
    row = mean[HEADLINE[name]]
    text = f"{name} fold mean: R@10 {100 * row['R@10']:.1f}, MRR {100 * row['MRR']:.1f}"
    if name == "locomo":
        text += " (" + ", ".join(f"{g.split(' ', 1)[1]} {100 * mean[g]['R@10']:.1f}" for g in CATEGORIES if g in mean) + ")"
    return text

