"""Credential detection: a memory must never store a secret (DESIGN invariant 5).

Rules are plain regular expressions: well-known token formats by their prefixes (measured on
the corpus in ``tests/secret_corpus.py``: 62 formats, 115 English and Chinese prose
sentences; see ``bench/secrets.py``), credentials inside URLs, ``Authorization`` headers and
connection strings, ``password=``-style assignments and "the password is X" in English and
Chinese. Where a prefix or keyword also occurs in prose (``sk-hynix-…``, ``pwd: /home/…``), the
matched value must also look random: mixed letters and digits, or high entropy, and never a
path or a placeholder. A finding names the line and the rule; the matched text itself is never
echoed back (it would leak into terminals and logs), only a masked preview.

A rule runs only on a text that holds one of its needles (literals every match contains), so a
memory costs a few of the 47 searches, with the findings of running them all.
"""
from __future__ import annotations

import functools
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Callable

_B64 = r"A-Za-z0-9+/"
_URLSAFE = r"A-Za-z0-9_-"


def _mixed(value: str) -> bool:
    """Letters of both cases and a digit: what generated tokens have and words do not."""
    return any(c.isupper() for c in value) and any(c.islower() for c in value) and any(c.isdigit() for c in value)


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _random_40(value: str) -> bool:
    """A bare 40-character base64 run that is a secret, not a path or a word: mixed, high entropy."""
    return _mixed(value) and _entropy(value) >= 4.2


_PLACEHOLDER = re.compile(r"(?i)^(?:\*{3}|<|\$|\{\{|%|x{3}|redacted|none|null|changeme|required|optional|"
                          r"example|placeholder|your[_-])")


def _looks_secret(value: str) -> bool:
    """A value that reads like a credential, not prose ("password: required", a path)."""
    value = value.strip("\"'`")
    if _PLACEHOLDER.match(value) or value.startswith(("/", "~", "./", "../")) or re.match(r"^[A-Za-z]:\\", value):
        return False
    if len(value) >= 20:
        return True
    has_digit = any(c.isdigit() for c in value)
    has_symbol = any(not c.isalnum() for c in value)
    mixed_case = any(c.islower() for c in value) and any(c.isupper() for c in value[1:])
    return len(value) >= 8 and (has_digit or has_symbol or mixed_case) or len(value) >= 6 and has_digit and mixed_case


def _token(value: str) -> bool:
    return len(value) >= 16 and any(c.isdigit() for c in value) and not _PLACEHOLDER.match(value)


Check = Callable[[str], bool]
_ASSIGN_KEYS = (r"password|passwd|pwd|passphrase|secret|api[_-]?key|apikey|access[_-]?token|auth[_-]?token|"
                r"client[_-]?secret|private[_-]?key|secret[_-]?key|密码|口令|密钥")

# A rule: name, regular expression, check of the value (or of the whole match), needles. Every
# match contains one of the needles, so a text without any of them is not searched (most rules
# cost 20-40 µs per memory, the needle lookups well under 1 µs). Needles of a (?i) rule are lower
# case and looked up in the folded text (_fold); the others, exactly as written, in the text.
# No needles: the rule always runs (unless _LONG_WORD_RULES says the text cannot hold a match).
# tests/test_secrets.py checks the scan gives exactly the findings of running every rule.
Rule = tuple[str, str, Check | None, tuple[str, ...]]
RULES: tuple[Rule, ...] = (
    # ---- token formats by prefix
    ("aws-access-key-id", r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b", None, ("AKIA", "ASIA", "ABIA", "ACCA")),
    ("aws-secret-access-key",
        rf"(?i)aws.{{0,20}}(?:secret|private).{{0,20}}[=:]\s*['\"]?[{_B64}=]{{40}}(?![{_B64}])", None, ("aws",)),
    ("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b", None,
     ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    ("gitlab-token", r"\bgl(?:pat|dt|rt|ptt|cbt|oas)-[A-Za-z0-9_-]{20,}", None,
     ("glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "gloas-")),
    ("huggingface-token", r"\bhf_[A-Za-z0-9]{30,}\b", None, ("hf_",)),
    ("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b", None, ("npm_",)),
    ("pypi-token", r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}", None, ("pypi-AgEIcHlwaS5vcmc",)),
    ("openai-api-key", r"\bsk-(?:proj-|svcacct-|admin-)?(?P<value>[A-Za-z0-9_-]{20,})", _mixed, ("sk-",)),
    ("anthropic-api-key", r"\bsk-ant-(?P<value>[A-Za-z0-9_-]{20,})", _mixed, ("sk-ant-",)),
    ("groq-api-key", r"\bgsk_[A-Za-z0-9]{40,}\b", None, ("gsk_",)),
    ("replicate-token", r"\br8_[A-Za-z0-9]{30,}\b", None, ("r8_",)),
    ("perplexity-api-key", r"\bpplx-[A-Za-z0-9]{40,}\b", None, ("pplx-",)),
    ("slack-token", r"\bxox[abposre]-[A-Za-z0-9-]{10,}\b", None, ("xox",)),
    ("slack-webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/]{20,}", None,
     ("https://hooks.slack.com/services/",)),
    ("discord-webhook", r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{40,}",
     None, ("/api/webhooks/",)),
    ("telegram-bot-token", r"\b\d{8,10}:AA[A-Za-z0-9_-]{30,}", None, (":AA",)),
    ("google-api-key", r"\bAIza[0-9A-Za-z_-]{35}\b", None, ("AIza",)),
    ("google-oauth-secret", r"\bGOCSPX-[A-Za-z0-9_-]{20,}", None, ("GOCSPX-",)),
    ("stripe-secret-key", r"\b[sr]k_live_[0-9A-Za-z]{20,}\b", None, ("k_live_",)),
    ("square-token", r"\bsq0(?:atp|csp)-[A-Za-z0-9_-]{22,}", None, ("sq0atp-", "sq0csp-")),
    ("twilio-api-key", r"\bSK[0-9a-f]{32}\b", None, ("SK",)),
    ("sendgrid-api-key", r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{30,}", None, ("SG.",)),
    ("mailgun-api-key", r"\bkey-[0-9a-f]{32}\b", None, ("key-",)),
    ("shopify-token", r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b", None, ("shpat_", "shpca_", "shppa_", "shpss_")),
    ("digitalocean-token", r"\bdo[por]_v1_[a-f0-9]{64}\b", None, ("dop_v1_", "doo_v1_", "dor_v1_")),
    ("docker-hub-token", r"\bdckr_pat_[A-Za-z0-9_-]{24,}", None, ("dckr_pat_",)),
    ("databricks-token", r"\bdapi[a-f0-9]{32}\b", None, ("dapi",)),
    ("linear-api-key", r"\blin_api_[A-Za-z0-9]{40}\b", None, ("lin_api_",)),
    ("notion-token", r"\b(?:ntn|secret)_[A-Za-z0-9]{43,}\b", None, ("ntn_", "secret_")),
    ("postman-api-key", r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b", None, ("PMAK-",)),
    ("grafana-token", r"\bgl(?:c|sa)_[A-Za-z0-9+/=_-]{32,}", None, ("glc_", "glsa_")),
    ("new-relic-key", r"\bNRAK-[A-Z0-9]{27}\b", None, ("NRAK-",)),
    ("doppler-token", r"\bdp\.(?:st|sa|ct|pt)\.(?:[a-z0-9_-]+\.)?[A-Za-z0-9]{40,}", None,
     ("dp.st.", "dp.sa.", "dp.ct.", "dp.pt.")),
    ("hashicorp-vault-token", r"\bhv[sb]\.[A-Za-z0-9_-]{24,}", None, ("hvs.", "hvb.")),
    ("age-secret-key", r"\bAGE-SECRET-KEY-1[A-Z0-9]{58}\b", None, ("AGE-SECRET-KEY-1",)),
    ("alibaba-access-key", r"\bLTAI(?P<value>[A-Za-z0-9]{12,20})\b", _mixed, ("LTAI",)),
    ("tencent-secret-id", r"\bAKID(?P<value>[A-Za-z0-9]{32})\b", _mixed, ("AKID",)),
    ("private-key-block", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----", None, ("-----BEGIN ",)),
    ("jwt", r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}", None, ("eyJ",)),
    # ---- credentials in places: URLs, headers, connection strings
    ("url-credentials", r"\b[a-z][a-z0-9+.-]*://[^/\s:@]*:(?P<value>[^/\s@]{3,})@",
     lambda v: not _PLACEHOLDER.match(v), ("://",)),
    ("authorization-header",
        r"(?i)\bauthorization\s*[:=]\s*[\"']?(?:bearer|token|basic|digest)\s+(?P<value>[A-Za-z0-9._~+/=-]{16,})", _token,
     ("authorization",)),
    ("bearer-token", r"\bBearer\s+(?P<value>[A-Za-z0-9._~+/-]{20,}=*)", lambda v: _token(v) and _entropy(v) >= 3.5,
     ("Bearer",)),
    ("connection-string-key",
        r"(?i)\b(?:AccountKey|SharedAccessKey|SharedAccessSignature|SharedSecret)\s*=\s*(?P<value>[A-Za-z0-9+/%=]{20,})", None,
     ("accountkey", "sharedaccess", "sharedsecret")),
    ("aws-secret-access-key-bare", rf"(?<![{_B64}=_.-])(?P<value>[{_B64}]{{40}})(?![{_B64}=_.-])", _random_40,
     ()),  # no literal: runs on a text with a word of 40 characters or more (_LONG_WORD_RULES)
    # ---- passwords written as assignments or sentences
    # "pass" stands for password, passwd and passphrase; "secret" for client_secret and secret_key too;
    # "api" for api_key and apikey; "token" for access_token and auth_token. The (?=[…]) lookaheads
    # hold the first letters of the keys: a position where no key can start fails at once instead
    # of trying every alternative (3-4x less time, the same matches; tests/test_secrets.py
    # compares them with the patterns without the lookahead).
    ("password-assignment",
        rf"(?i)(?=[pacs密口])(?:{_ASSIGN_KEYS})[\"']?\s*(?:=|:|：)\s*[\"']?(?P<value>[^\s\"',;，。]{{6,}})", _looks_secret,
     ("pass", "pwd", "secret", "api", "token", "private", "密码", "口令", "密钥")),
    ("password-sentence",
        r"(?i)(?=[psat])\b(?:password|passwd|passphrase|passcode|secret key|api key|token)\s+(?:is|was|=)\s*[:：]?\s*[\"'`]?"
        r"(?P<value>[!-~]{6,})", _looks_secret, ("pass", "secret key", "api key", "token")),
    ("password-sentence-zh",
        r"(?:密码|口令|密钥|令牌)\s*(?:是|为|就是)\s*[:：]?\s*[\"'`“]?(?P<value>[!-~]{6,})", _looks_secret,
     ("密码", "口令", "密钥", "令牌")),
)


@dataclass(frozen=True)
class Finding:
    rule: str
    line: int
    preview: str

    def message(self) -> str:
        return (f"looks like a credential ({self.rule}: {self.preview}); remove it and store "
                "a pointer to where the secret lives (a vault path or env var name) instead")


def _mask(text: str) -> str:
    return text[:4] + "…" if len(text) > 4 else "…"


def scan(text: str) -> list[Finding]:
    """Every credential-like match in ``text``, with 1-based line numbers (one per line and rule)."""
    findings: dict[tuple[int, str], Finding] = {}
    for (rule, source, check, _), start in _rules_for(text):
        for m in _compiled(source).finditer(text, start):
            value = m.groupdict().get("value")
            if check is not None and not check(value if value is not None else m.group(0)):
                continue
            line = text.count("\n", 0, m.start()) + 1
            findings.setdefault((line, rule), Finding(rule, line, _mask(m.group(0))))
    return sorted(findings.values(), key=lambda f: (f.line, f.rule))


def _rules_for(text: str) -> list[tuple[Rule, int]]:
    """The rules that can match ``text`` (those with a needle in it, and those without needles
    unless _LONG_WORD_RULES rules them out), each with the position its search starts at: 0, or
    for a rule in _LEAD, its first needle's position less the lead (the folded text has the
    text's length, so positions agree)."""
    folded = _fold(text)
    run = []
    for rule, ignorecase, lead in _PLAN:
        haystack = folded if ignorecase else text
        if not rule[3]:
            if rule[0] not in _LONG_WORD_RULES or max(map(len, text.split()), default=0) >= 40:
                run.append((rule, 0))
        elif lead is not None:
            found = [i for i in map(haystack.find, rule[3]) if i >= 0]
            if found:
                run.append((rule, max(0, min(found) - lead)))
        else:
            for needle in rule[3]:  # a plain loop: any() over a generator costs 4x as much here
                if needle in haystack:
                    run.append((rule, 0))
                    break
    return run


# How many characters before its first needle a match can start, for the rules that run on most
# memories (password, secret and token are common words): the search then skips the text before.
# A password-assignment key holds its needle at most 7 characters in (access_token, client_secret);
# the sentence keys start with theirs.
_LEAD = {"password-assignment": 7, "password-sentence": 0}
# The bare 40-character rule has no literal, but its match is 40 characters none of which is
# white space: a text whose whitespace-separated words are all shorter cannot hold one (98 % of
# synthetic memories; the split costs about half of the search it saves).
_LONG_WORD_RULES = frozenset({"aws-secret-access-key-bare"})
_PLAN = tuple((rule, rule[1].startswith("(?i)"), _LEAD.get(rule[0])) for rule in RULES)


@functools.cache
def _compiled(source: str) -> re.Pattern[str]:
    """A rule's pattern, compiled when a text first needs it: compiling all of them took ~10 ms
    of every command that imports this module (``add``, the pre-commit hook), most never used."""
    return re.compile(source)


def _fold(text: str) -> str:
    """``text`` as a (?i) rule's needles are looked up in: lower-cased, and first the three
    characters that re's case folding matches to an ASCII letter which ``str.lower`` does not
    give: ı (U+0131) and İ (U+0130, which lower() makes two characters, "i" and a combining dot)
    match "i", ſ (U+017F) matches "s". Every other character keeps its place (lower() of any
    other code point is one character). tests/test_secrets.py checks both for every code point."""
    if not text.isascii():
        text = text.replace("ı", "i").replace("İ", "i").replace("ſ", "s")
    return text.lower()
