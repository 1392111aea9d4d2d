"""Credential scanner vs detect-secrets on the test corpus (issue 9, case 16).

    .venv/bin/pip install detect-secrets==1.5.0   # measurement only, not a memrepo dependency
    .venv/bin/python bench/secrets.py

Prints, per scanner: credential formats caught (of tests/secret_corpus.py's list), prose
sentences refused (English and Chinese), and the time per text (median).
"""
from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from secret_corpus import CREDENTIALS, PROSE_EN, PROSE_ZH  # noqa: E402

from memrepo.store import secretscan  # noqa: E402


def memrepo_scan(text: str) -> bool:
    return bool(secretscan.scan(text))


def detect_secrets_scanner():
    """detect-secrets as a pre-commit hook runs it: a file scanned with the default plugins and
    filters (its ad-hoc string mode, eager search, flags nearly every line and is not used)."""
    try:
        from detect_secrets import SecretsCollection
        from detect_secrets.settings import default_settings
    except ImportError:
        return None
    folder = Path(tempfile.mkdtemp(prefix="memrepo-ds-"))

    def scan(text: str) -> bool:
        path = folder / "memory.md"
        path.write_text(text + "\n", encoding="utf-8")
        found = SecretsCollection()
        with default_settings():
            found.scan_file(str(path))
        return bool(list(found))
    return scan


def measure(name: str, scan) -> dict:
    times, missed, refused_en, refused_zh = [], [], [], []
    for fmt, text in CREDENTIALS:
        t = time.perf_counter()
        hit = scan(text)
        times.append(time.perf_counter() - t)
        if not hit:
            missed.append(fmt)
    for group, out in ((PROSE_EN, refused_en), (PROSE_ZH, refused_zh)):
        for text in group:
            t = time.perf_counter()
            if scan(text):
                out.append(text)
            times.append(time.perf_counter() - t)
    return {"name": name, "missed": missed, "refused_en": refused_en, "refused_zh": refused_zh,
            "median_us": statistics.median(times) * 1e6}


def main() -> int:
    rows = [measure("memrepo secretscan", memrepo_scan)]
    ds = detect_secrets_scanner()
    if ds is not None:
        rows.append(measure("detect-secrets 1.5.0 (default plugins)", ds))
    else:
        print("detect-secrets is not installed: pip install detect-secrets==1.5.0 to compare", file=sys.stderr)
    n_cred, n_en, n_zh = len(CREDENTIALS), len(PROSE_EN), len(PROSE_ZH)
    print(f"| scanner | credential formats caught (of {n_cred}) | English prose refused (of {n_en}) "
          f"| Chinese prose refused (of {n_zh}) | median per text |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['name']} | {n_cred - len(r['missed'])} | {len(r['refused_en'])} | {len(r['refused_zh'])} "
              f"| {r['median_us']:.0f} µs |")
    for r in rows:
        if r["missed"]:
            print(f"\n{r['name']} missed: {', '.join(r['missed'])}")
        for text in r["refused_en"] + r["refused_zh"]:
            print(f"{r['name']} refused prose: {text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
