"""Credential scanner vs detect-secrets on the test corpus.

    .venv/bin/pip install detect-secrets==1.5.0   # measurement only, not a memrepo dependency
    .venv/bin/python bench/secrets.py

Prints, per scanner: credentials caught (of tests/secret_corpus.py's list: formats from the
public gitleaks and trufflehog rule sets, values generated there), harmless texts refused per
language (English prose, Chinese prose, code that reads a secret from elsewhere), and the time
per text (median).
"""
from __future__ import annotations

import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from secret_corpus import (  # noqa: E402
    CODE,
    CREDENTIALS,
    DISGUISED,
    HELD_OUT_CREDENTIALS,
    HELD_OUT_HARMLESS,
    PROSE_EN,
    PROSE_OTHER,
    PROSE_ZH,
)

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


def _lang(text: str) -> str:
    return "zh" if re.search(r"[\u4e00-\u9fff]", text) else "en"


def measure(name: str, scan) -> dict:
    """Credentials caught and harmless texts refused, per language (English, Chinese, code)."""
    times, missed = [], []
    caught = {"en": [0, 0], "zh": [0, 0]}
    for fmt, text in CREDENTIALS:
        t = time.perf_counter()
        hit = scan(text)
        times.append(time.perf_counter() - t)
        caught[_lang(text)][1] += 1
        if hit:
            caught[_lang(text)][0] += 1
        else:
            missed.append(fmt)
    refused: dict[str, list[str]] = {"en": [], "zh": [], "code": []}
    for lang, group in (("en", PROSE_EN), ("zh", PROSE_ZH), ("code", CODE)):
        for text in group:
            t = time.perf_counter()
            if scan(text):
                refused[lang].append(text)
            times.append(time.perf_counter() - t)
    return {"name": name, "missed": missed, "caught": caught, "refused": refused,
            "median_us": statistics.median(times) * 1e6}


def main() -> int:
    rows = [measure("memrepo secretscan", memrepo_scan)]
    ds = detect_secrets_scanner()
    if ds is not None:
        rows.append(measure("detect-secrets 1.5.0 (default plugins)", ds))
    else:
        print("detect-secrets is not installed: pip install detect-secrets==1.5.0 to compare", file=sys.stderr)
    sizes = {"en": len(PROSE_EN), "zh": len(PROSE_ZH), "code": len(CODE)}
    print(f"Corpus: {len(CREDENTIALS)} credentials ({len(set(f for f, _ in CREDENTIALS))} formats), "
          f"{sizes['en']} English and {sizes['zh']} Chinese harmless sentences, {sizes['code']} lines of code that "
          "name a secret without holding it (tests/secret_corpus.py)\n")
    print("| scanner | credentials caught, English | credentials caught, Chinese | harmless refused: English prose "
          "| Chinese prose | code | median per text |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        (ce, ne), (cz, nz) = r["caught"]["en"], r["caught"]["zh"]
        print(f"| {r['name']} | {ce} of {ne} | {cz} of {nz} | {len(r['refused']['en'])} of {sizes['en']} "
              f"| {len(r['refused']['zh'])} of {sizes['zh']} | {len(r['refused']['code'])} of {sizes['code']} "
              f"| {r['median_us']:.0f} µs |")
    print(f"\nHeld out (written after the rules were settled, never tuned on): {len(HELD_OUT_CREDENTIALS)} "
          f"credentials, {len(HELD_OUT_HARMLESS)} harmless texts (English, Chinese and code)\n")
    print("| scanner | credentials caught, English | credentials caught, Chinese | harmless refused |")
    print("|---|---:|---:|---:|")
    held = []
    for name, scan in [("memrepo secretscan", memrepo_scan)] + ([("detect-secrets 1.5.0 (default plugins)", ds)] if ds else []):
        found = {"en": [0, 0], "zh": [0, 0]}
        missed = []
        for fmt, text in HELD_OUT_CREDENTIALS:
            found[_lang(text)][1] += 1
            if scan(text):
                found[_lang(text)][0] += 1
            else:
                missed.append(fmt)
        refused = [t for t in HELD_OUT_HARMLESS if scan(t)]
        held.append((name, missed, refused))
        print(f"| {name} | {found['en'][0]} of {found['en'][1]} | {found['zh'][0]} of {found['zh'][1]} "
              f"| {len(refused)} of {len(HELD_OUT_HARMLESS)} |")
    print(f"\nIn disguise (JSON escapes, invisible or full-width characters, base64, nine other languages): "
          f"{len(DISGUISED)} credentials, {len(PROSE_OTHER)} harmless texts of the same kinds\n")
    print("| scanner | credentials caught | harmless refused |")
    print("|---|---:|---:|")
    for name, scan in [("memrepo secretscan", memrepo_scan)] + ([("detect-secrets 1.5.0 (default plugins)", ds)] if ds else []):
        caught = sum(1 for _fmt, text in DISGUISED if scan(text))
        print(f"| {name} | {caught} of {len(DISGUISED)} | {sum(1 for t in PROSE_OTHER if scan(t))} of {len(PROSE_OTHER)} |")
    for name, missed, refused in held:
        if missed:
            print(f"\n{name} missed (held out): {', '.join(missed)}")
        for text in refused:
            print(f"{name} refused (held out): {text!r}")
    for r in rows:
        if r["missed"]:
            print(f"\n{r['name']} missed: {', '.join(r['missed'])}")
        for lang, texts in r["refused"].items():
            for text in texts:
                print(f"{r['name']} refused ({lang}): {text!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
