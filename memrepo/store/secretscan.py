"""Credential detection: a memory must never store a secret (DESIGN invariant 5).

Rules are plain regular expressions for well-known token formats plus ``password=``-style
assignments. A finding names the line and the rule; the matched text itself is never echoed
back (it would leak into terminals and logs), only a masked preview.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("aws-access-key-id", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b")),
    ("aws-secret-access-key", re.compile(
        r"(?i)aws.{0,20}(?:secret|private).{0,20}[=:]\s*['\"]?[A-Za-z0-9/+=]{40}\b")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b")),
    ("openai-api-key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}\b")),
    ("anthropic-api-key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}\b")),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b")),
    ("slack-webhook", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/]{20,}")),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("stripe-secret-key", re.compile(r"\b[sr]k_live_[0-9A-Za-z]{20,}\b")),
    ("private-key-block", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}")),
    ("url-credentials", re.compile(r"\b[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]{3,}@")),
    ("password-assignment", re.compile(
        r"(?i)(?:password|passwd|pwd|passphrase|secret|api[_-]?key|access[_-]?token|auth[_-]?token|"
        r"client[_-]?secret|密码|口令|密钥)"
        r"[\"']?\s*(?:=|:|：)\s*[\"']?(?!\s|\*{3}|<|\$\{|\{\{|x{3}|redacted|none|null|changeme\b)"
        r"(?P<value>[^\s\"',;，。]{6,})")),
)


def _looks_secret(value: str) -> bool:
    """A value that reads like a credential, not prose ("password: required")."""
    if len(value) >= 20:
        return True
    has_digit = any(c.isdigit() for c in value)
    has_symbol = any(not c.isalnum() for c in value)
    mixed_case = any(c.islower() for c in value) and any(c.isupper() for c in value[1:])
    return len(value) >= 8 and (has_digit or has_symbol or mixed_case)


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
    """Every credential-like match in ``text``, with 1-based line numbers."""
    findings: list[Finding] = []
    for rule, pattern in RULES:
        for m in pattern.finditer(text):
            value = m.groupdict().get("value")
            if value is not None and not _looks_secret(value):
                continue
            line = text.count("\n", 0, m.start()) + 1
            findings.append(Finding(rule, line, _mask(m.group(0))))
    return sorted(findings, key=lambda f: (f.line, f.rule))
