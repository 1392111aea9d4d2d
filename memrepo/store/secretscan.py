"""Credential detection: a memory must never store a secret (DESIGN invariant 5).

Rules are plain regular expressions: well-known token formats by their prefixes (measured on
the corpus in ``tests/secret_corpus.py``: 62 formats, 115 English and Chinese prose
sentences; see ``bench/secrets.py``), credentials inside URLs, ``Authorization`` headers and
connection strings, ``password=``-style assignments and "the password is X" in English and
Chinese. Where a prefix or keyword also occurs in prose (``sk-hynix-…``, ``pwd: /home/…``), the
matched value must also look random: mixed letters and digits, or high entropy, and never a
path or a placeholder. A finding names the line and the rule; the matched text itself is never
echoed back (it would leak into terminals and logs), only a masked preview.
"""
from __future__ import annotations

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

RULES: tuple[tuple[str, re.Pattern[str], Check | None], ...] = (
    # ---- token formats by prefix
    ("aws-access-key-id", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"), None),
    ("aws-secret-access-key", re.compile(
        rf"(?i)aws.{{0,20}}(?:secret|private).{{0,20}}[=:]\s*['\"]?[{_B64}=]{{40}}(?![{_B64}])"), None),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"), None),
    ("gitlab-token", re.compile(r"\bgl(?:pat|dt|rt|ptt|cbt|oas)-[A-Za-z0-9_-]{20,}"), None),
    ("huggingface-token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"), None),
    ("npm-token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), None),
    ("pypi-token", re.compile(r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}"), None),
    ("openai-api-key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?(?P<value>[A-Za-z0-9_-]{20,})"), _mixed),
    ("anthropic-api-key", re.compile(r"\bsk-ant-(?P<value>[A-Za-z0-9_-]{20,})"), _mixed),
    ("groq-api-key", re.compile(r"\bgsk_[A-Za-z0-9]{40,}\b"), None),
    ("replicate-token", re.compile(r"\br8_[A-Za-z0-9]{30,}\b"), None),
    ("perplexity-api-key", re.compile(r"\bpplx-[A-Za-z0-9]{40,}\b"), None),
    ("slack-token", re.compile(r"\bxox[abposre]-[A-Za-z0-9-]{10,}\b"), None),
    ("slack-webhook", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/]{20,}"), None),
    ("discord-webhook", re.compile(r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{40,}"), None),
    ("telegram-bot-token", re.compile(r"\b\d{8,10}:AA[A-Za-z0-9_-]{30,}"), None),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"), None),
    ("google-oauth-secret", re.compile(r"\bGOCSPX-[A-Za-z0-9_-]{20,}"), None),
    ("stripe-secret-key", re.compile(r"\b[sr]k_live_[0-9A-Za-z]{20,}\b"), None),
    ("square-token", re.compile(r"\bsq0(?:atp|csp)-[A-Za-z0-9_-]{22,}"), None),
    ("twilio-api-key", re.compile(r"\bSK[0-9a-f]{32}\b"), None),
    ("sendgrid-api-key", re.compile(r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{30,}"), None),
    ("mailgun-api-key", re.compile(r"\bkey-[0-9a-f]{32}\b"), None),
    ("shopify-token", re.compile(r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b"), None),
    ("digitalocean-token", re.compile(r"\bdo[por]_v1_[a-f0-9]{64}\b"), None),
    ("docker-hub-token", re.compile(r"\bdckr_pat_[A-Za-z0-9_-]{24,}"), None),
    ("databricks-token", re.compile(r"\bdapi[a-f0-9]{32}\b"), None),
    ("linear-api-key", re.compile(r"\blin_api_[A-Za-z0-9]{40}\b"), None),
    ("notion-token", re.compile(r"\b(?:ntn|secret)_[A-Za-z0-9]{43,}\b"), None),
    ("postman-api-key", re.compile(r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b"), None),
    ("grafana-token", re.compile(r"\bgl(?:c|sa)_[A-Za-z0-9+/=_-]{32,}"), None),
    ("new-relic-key", re.compile(r"\bNRAK-[A-Z0-9]{27}\b"), None),
    ("doppler-token", re.compile(r"\bdp\.(?:st|sa|ct|pt)\.(?:[a-z0-9_-]+\.)?[A-Za-z0-9]{40,}"), None),
    ("hashicorp-vault-token", re.compile(r"\bhv[sb]\.[A-Za-z0-9_-]{24,}"), None),
    ("age-secret-key", re.compile(r"\bAGE-SECRET-KEY-1[A-Z0-9]{58}\b"), None),
    ("alibaba-access-key", re.compile(r"\bLTAI(?P<value>[A-Za-z0-9]{12,20})\b"), _mixed),
    ("tencent-secret-id", re.compile(r"\bAKID(?P<value>[A-Za-z0-9]{32})\b"), _mixed),
    ("private-key-block", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"), None),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"), None),
    # ---- credentials in places: URLs, headers, connection strings
    ("url-credentials", re.compile(r"\b[a-z][a-z0-9+.-]*://[^/\s:@]*:(?P<value>[^/\s@]{3,})@"),
     lambda v: not _PLACEHOLDER.match(v)),
    ("authorization-header", re.compile(
        r"(?i)\bauthorization\s*[:=]\s*[\"']?(?:bearer|token|basic|digest)\s+(?P<value>[A-Za-z0-9._~+/=-]{16,})"), _token),
    ("bearer-token", re.compile(r"\bBearer\s+(?P<value>[A-Za-z0-9._~+/-]{20,}=*)"), lambda v: _token(v) and _entropy(v) >= 3.5),
    ("connection-string-key", re.compile(
        r"(?i)\b(?:AccountKey|SharedAccessKey|SharedAccessSignature|SharedSecret)\s*=\s*(?P<value>[A-Za-z0-9+/%=]{20,})"), None),
    ("aws-secret-access-key-bare", re.compile(rf"(?<![{_B64}=_.-])(?P<value>[{_B64}]{{40}})(?![{_B64}=_.-])"), _random_40),
    # ---- passwords written as assignments or sentences
    ("password-assignment", re.compile(
        rf"(?i)(?:{_ASSIGN_KEYS})[\"']?\s*(?:=|:|：)\s*[\"']?(?P<value>[^\s\"',;，。]{{6,}})"), _looks_secret),
    ("password-sentence", re.compile(
        r"(?i)\b(?:password|passwd|passphrase|passcode|secret key|api key|token)\s+(?:is|was|=)\s*[:：]?\s*[\"'`]?"
        r"(?P<value>[!-~]{6,})"), _looks_secret),
    ("password-sentence-zh", re.compile(
        r"(?:密码|口令|密钥|令牌)\s*(?:是|为|就是)\s*[:：]?\s*[\"'`“]?(?P<value>[!-~]{6,})"), _looks_secret),
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
    for rule, pattern, check in RULES:
        for m in pattern.finditer(text):
            value = m.groupdict().get("value")
            if check is not None and not check(value if value is not None else m.group(0)):
                continue
            line = text.count("\n", 0, m.start()) + 1
            findings.setdefault((line, rule), Finding(rule, line, _mask(m.group(0))))
    return sorted(findings.values(), key=lambda f: (f.line, f.rule))
