"""Credential detection: a memory must never store a secret (a vault is
committed, pushed and cloned: a secret in it would travel with every copy).

Rules are plain regular expressions: well-known token formats by their prefixes (measured on
the corpus in ``tests/secret_corpus.py``: 117 credentials in formats from the gitleaks and
trufflehog rule sets, 145 English and Chinese sentences and 50 lines of code that name a secret
without holding it, plus a held-out set; see ``bench/secrets.py``), credentials inside URLs,
``Authorization`` headers, connection strings and command lines (``curl -u``, ``sshpass -p``,
``.netrc``), password hashes, ``password=``-style assignments and "the password is X" in
English and Chinese. An assigned value that is code naming where the secret comes from
(``os.environ["DB_PASSWORD"]``, ``settings.SECRET_KEY``) or Chinese words is not a secret. Where a prefix or keyword also occurs in prose (``sk-hynix-…``, ``pwd: /home/…``), the
matched value must also look random: mixed letters and digits, or high entropy, and never a
path or a placeholder. A finding names the line and the rule; the matched text itself is never
echoed back (it would leak into terminals and logs), only a masked preview.

A rule runs only on a text that holds one of its needles (literals every match contains), so a
memory costs a few of the searches, with the findings of running them all.
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


_PLACEHOLDER = re.compile(r"(?i)^(?:\*{3}|<|\$|\{\{|%|x{3}|\[?redacted|none|null|changeme|required|optional|"
                          r"example|placeholder|your[_-])")


# Code that names where a secret comes from without holding it: a call or a subscript
# (``os.environ[``, ``secrets_client.get(``, ``input(``) or a dotted name (``settings.SECRET_KEY``,
# ``process.env.OPENAI_API_KEY``). The first name is lower case and without digits, so a password
# such as ``Hunter2.prod`` or ``My.Pass12`` is still a password.
_CODE = re.compile(r"^(?:[a-z_$][A-Za-z_$][\w$]*(?:(?:\.|::|->)[A-Za-z_$][\w$]*)*[(\[]"
                   r"|[A-Z][A-Za-z_$]+(?:(?:\.|::|->)[A-Za-z_$][\w$]*)+[(\[]"
                   r"|[a-z_$][A-Za-z_$]{2,}(?:(?:\.|::|->)[A-Za-z_$][\w$]*)+$)")
_CJK_CHAR = re.compile(r"[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff00-\uffef]")


def _looks_secret(value: str) -> bool:
    """A value that reads like a credential, not prose ("password: required", a path, Chinese
    words) nor code that fetches it from elsewhere (``os.environ["DB_PASSWORD"]``)."""
    value = value.strip("\"'`")
    if _PLACEHOLDER.match(value) or value.startswith(("/", "~", "./", "../")) or re.match(r"^[A-Za-z]:\\", value):
        return False
    if _CODE.match(value) or _CJK_CHAR.search(value):
        return False
    if len(value) >= 20:
        return True
    has_digit = any(c.isdigit() for c in value)
    has_symbol = any(not c.isalnum() for c in value)
    mixed_case = any(c.islower() for c in value) and any(c.isupper() for c in value[1:])
    return len(value) >= 8 and (has_digit or has_symbol or mixed_case) or len(value) >= 6 and has_digit and mixed_case


def _literal(value: str) -> bool:
    """A written value, not a variable or a placeholder (``$TOKEN``, ``<password>``, ``{{ x }}``)."""
    return len(value) >= 3 and not _PLACEHOLDER.match(value.strip("\"'`")) and "$" not in value


def _basic_auth(value: str) -> bool:
    """Base64 of ``user:password`` (a docker ``auth`` entry)."""
    import base64
    import binascii
    try:
        decoded = base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    user, sep, password = decoded.partition(":")
    return bool(sep and user and len(password) >= 3)


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
    ("aws-session-token", r"\b(?:IQoJb3JpZ2luX2Vj|FwoGZXIvYXdzE)[A-Za-z0-9+/=]{100,}", None,
     ("IQoJb3JpZ2luX2Vj", "FwoGZXIvYXdzE")),
    ("azure-sas-signature", r"[?&]sv=\d{4}-\d\d-\d\d\S*?[?&]sig=[A-Za-z0-9%+/=]{30,}", None, ("sig=",)),
    ("firebase-server-key", r"\bAAAA[A-Za-z0-9_-]{7}:APA91b[A-Za-z0-9_-]{100,}", None, (":APA91b",)),
    ("discord-bot-token", r"\b[MNO][A-Za-z0-9]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}\b", None,
     ()),  # no literal: runs on a text with a word of 40 characters or more (_LONG_WORD_RULES)
    ("huawei-cloud-key",
        r"(?i)(?:huawei|hwcloud)[\w.-]{0,30}?(?:ak|sk|access[_-]?key(?:[_-]?id)?|secret[_-]?(?:access[_-]?)?key)\b"
        r"[\s\"'=:]{1,4}(?P<value>[A-Za-z0-9]{20,40})\b", lambda v: _entropy(v) >= 3.5, ("huawei", "hwcloud")),
    ("atlassian-api-token", r"\bATATT3[A-Za-z0-9_=-]{150,}", None, ("ATATT3",)),
    ("atlassian-keyed-token",
        r"(?i)\b(?:jira|confluence|atlassian)[\w.-]{0,20}[\s\"']{0,3}[=:]\s*[\"']?(?P<value>[A-Za-z0-9]{24})\b", _mixed,
     ("jira", "confluence", "atlassian")),
    ("1password-secret-key", r"\bA3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}\b",
     None, ("A3-",)),
    ("adobe-client-secret", r"\bp8e-[A-Za-z0-9]{32}\b", None, ("p8e-",)),
    ("artifactory-api-key", r"\bAKCp[A-Za-z0-9]{69}\b", None, ("AKCp",)),
    ("azure-ad-client-secret", r"(?<![\w~.])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}", None, ("Q~",)),
    ("clojars-token", r"(?i)\bCLOJARS_[a-z0-9]{60}", None, ("clojars_",)),
    ("cloudflare-origin-ca-key", r"\bv1\.0-[a-f0-9]{24}-[a-f0-9]{146}", None, ("v1.0-",)),
    ("dynatrace-token", r"\bdt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}\b", None, ("dt0c01.",)),
    ("easypost-key", r"\bEZ[AT]K[A-Za-z0-9]{54}\b", None, ("EZAK", "EZTK")),
    ("flutterwave-key", r"\bFLW(?:SECK|PUBK)_TEST-[a-h0-9]{32}-X", None, ("FLWSECK", "FLWPUBK")),
    ("hubspot-token", r"\bpat-(?:na|eu)1-[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}\b", None,
     ("pat-na1-", "pat-eu1-")),
    ("mapbox-secret-token", r"\bsk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}", None, ("sk.eyJ",)),
    ("teams-webhook", r"https://[\w-]+\.webhook\.office\.com/webhookb2/[\w@-]{40,}/IncomingWebhook/[a-z0-9]{32}/", None,
     ("webhook.office.com/webhookb2/",)),
    ("planetscale-token", r"\bpscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.=-]{32,64}", None, ("pscale_",)),
    ("prefect-key", r"\bpnu_[A-Za-z0-9]{36}\b", None, ("pnu_",)),
    ("pulumi-token", r"\bpul-[a-f0-9]{40}\b", None, ("pul-",)),
    ("readme-key", r"\brdme_[a-z0-9]{70}\b", None, ("rdme_",)),
    ("rubygems-key", r"\brubygems_[a-f0-9]{48}\b", None, ("rubygems_",)),
    ("brevo-key", r"\bxkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}\b", None, ("xkeysib-",)),
    ("sentry-token", r"\bsntr(?:ys|yu)_[A-Za-z0-9+/=_-]{40,}", None, ("sntrys_", "sntryu_")),
    ("shippo-token", r"\bshippo_(?:live|test)_[a-f0-9]{40}\b", None, ("shippo_",)),
    ("typeform-token", r"\btfp_[A-Za-z0-9_.=-]{40,}", None, ("tfp_",)),
    ("google-oauth-access-token", r"\bya29\.[A-Za-z0-9_-]{50,}", None, ("ya29.",)),
    ("stripe-webhook-secret", r"\bwhsec_[A-Za-z0-9]{32,}\b", None, ("whsec_",)),
    ("slack-app-token", r"\bxapp-\d-[A-Z0-9]+-\d+-[a-z0-9]{32,}\b", None, ("xapp-",)),
    ("twitter-bearer-token", r"\bA{21}[A-Za-z0-9%]{30,}", None, ("AAAAAAAAAAAAAAAAAAAAA",)),
    ("facebook-access-token", r"\bEAA[A-Za-z0-9]{90,}", lambda v: _mixed(v), ("EAA",)),
    ("yandex-oauth-token", r"\by0_[A-Za-z0-9_-]{55}\b", None, ("y0_",)),
    ("okta-api-token", r"(?i)\bSSWS\s+(?P<value>00[A-Za-z0-9_-]{40})", None, ("ssws",)),
    ("putty-private-key", r"PuTTY-User-Key-File-\d:", None, ("PuTTY-User-Key-File-",)),
    ("unix-password-hash",
        r"(?:\$(?:apr1|1|5|6)\$(?:rounds=\d+\$)?[./A-Za-z0-9]{1,22}\$[./A-Za-z0-9]{22,}|\$2[abxy]?\$\d\d\$[./A-Za-z0-9]{53})",
     None, ("$apr1$", "$1$", "$5$", "$6$", "$2$", "$2a$", "$2b$", "$2x$", "$2y$")),
    ("htpasswd-sha", r"\{SHA\}[A-Za-z0-9+/]{27}=", None, ("{SHA}",)),
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
    ("curl-user-password", r"\bcurl\b[^\n]*?\s(?:-u|--user)[ =]?[\"']?[^\s\"':$]+:(?P<value>[^\s\"']+)", _literal, ("curl",)),
    ("sshpass-password", r"\bsshpass\s+-p\s*[\"']?(?P<value>[^\s\"']+)", _literal, ("sshpass",)),
    ("netrc-password", r"\bmachine\s+\S+\s+login\s+\S+\s+password\s+(?P<value>\S+)", _literal, ("machine",)),
    ("docker-auth", r"\"auth\"\s*:\s*\"(?P<value>[A-Za-z0-9+/]{12,}={0,2})\"", _basic_auth, ('"auth"',)),
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
    ("password-sentence-far",
        r"(?i)\b(?:password|passwd|passphrase|passcode)\s+(?:for|of|to|on|at|in)\s[^\n.:;=]{1,40}?\s(?:is|was)\s+[\"'`]?"
        r"(?P<value>[!-~]{8,})",
     lambda v: _looks_secret(v) and any(c.isdigit() for c in v), ("pass",)),
    ("password-zh-bare", r"(?:密码|口令|密钥|令牌)[ \t]+(?P<value>[!-~]{6,})",
     lambda v: _looks_secret(v) and any(c.isdigit() for c in v) and any(c.isalpha() for c in v),
     ("密码", "口令", "密钥", "令牌")),
    # "the password is X" in other languages: German, French, Spanish, Portuguese, Japanese,
    # Korean, Dutch, and Italian (whose word is the English one: only before "è", its needle);
    # Russian apart, without (?i) (re folds old Cyrillic letters to о, str.lower does not).
    ("password-sentence-intl",
        r"(?i)(?:(?:passwort|kennwort|mot de passe|contraseña|contrasena|senha|パスワード|비밀번호|wachtwoord)"
        r"[^\n]{0,40}?(?:\s(?:lautet|ist|est|es|é|is)|[:：=—]|は|는|은)|password\s[^\n]{0,40}?\s[èé])"
        r"\s*[\"'`「“]?(?P<value>[!-~]{8,})",
     lambda v: _looks_secret(v) and any(c.isdigit() for c in v) and any(c.isalpha() for c in v),
     ("passwort", "kennwort", "mot de passe", "contraseña", "contrasena", "senha", "パスワード", "비밀번호",
      "wachtwoord", "è", "é")),
    ("password-sentence-ru", r"(?:[Пп]ароль|ПАРОЛЬ)[^\n]{0,40}?(?:\s—|[:：=—])\s*[\"'`«]?(?P<value>[!-~]{8,})",
     lambda v: _looks_secret(v) and any(c.isdigit() for c in v) and any(c.isalpha() for c in v), ("ароль", "АРОЛЬ")),
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


def _matches(text: str):
    """(rule, match) of every credential-like match in ``text``."""
    for (rule, source, check, _), start in _rules_for(text):
        for m in _compiled(source).finditer(text, start):
            value = m.groupdict().get("value")
            if check is not None and not check(value if value is not None else m.group(0)):
                continue
            yield rule, m


def scan(text: str) -> list[Finding]:
    """Every credential-like match in ``text``, with 1-based line numbers (one per line and rule)."""
    findings: dict[tuple[int, str], Finding] = {}
    for rule, m in _matches(text):
        line = text.count("\n", 0, m.start()) + 1
        findings.setdefault((line, rule), Finding(rule, line, _mask(m.group(0))))
    for rule, line in _disguised(text):
        findings.setdefault((line, rule), Finding(rule, line, "…"))
    return sorted(findings.values(), key=lambda f: (f.line, f.rule))


# ---- credentials in disguise: the same rules on what a text spells otherwise. A tool result
# that is itself JSON escapes "/" and "=" (postgres:\/\/…, \u003d); a zero-width character or
# full-width letters split or hide a token from every pattern; base64 wraps a Kubernetes secret
# or an encoded env dump. Each costs nothing on a text that cannot hold it (no backslash, only
# ASCII, no word of 40 characters).
_INVISIBLE = re.compile("[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")
_FULL_WIDTH = {c: c - 0xFEE0 for r in ((0xFF10, 0xFF19), (0xFF21, 0xFF3A), (0xFF41, 0xFF5A)) for c in range(r[0], r[1] + 1)}
_ESCAPE = re.compile(r"\\(?:/|u([0-9a-fA-F]{4}))")
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{40,}={0,2}")


def _plain(text: str) -> str:
    """``text`` with JSON's escaped slashes and printable \\u escapes written out, invisible
    characters dropped and full-width letters and digits made ASCII (lines stay where they are)."""
    if "\\" in text:
        text = _ESCAPE.sub(lambda m: "/" if m.group(1) is None else (
            chr(int(m.group(1), 16)) if chr(int(m.group(1), 16)).isprintable() else m.group(0)), text)
    if not text.isascii():
        text = _INVISIBLE.sub("", text).translate(_FULL_WIDTH)
    return text


def _decoded_runs(text: str):
    """(match, decoded text) of each base64 run of 40 characters or more that decodes to text."""
    import base64
    import binascii
    if max(map(len, text.split()), default=0) < 40:
        return
    for m in _BASE64_RUN.finditer(text):
        run = m.group(0)
        try:
            decoded = base64.b64decode(run + "=" * (-len(run) % 4), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            continue
        if decoded.isprintable() or all(c.isprintable() or c in "\n\r\t" for c in decoded):
            yield m, decoded


def _disguised(text: str):
    """(rule, line) of every credential that only a decoded spelling of ``text`` shows."""
    plain = _plain(text)
    if plain != text:
        for rule, m in _matches(plain):
            yield rule, plain.count("\n", 0, m.start()) + 1
    for m, decoded in _decoded_runs(text):
        for rule, _ in _matches(decoded):
            yield f"{rule}-base64", text.count("\n", 0, m.start()) + 1


def redact(text: str) -> tuple[str, list[Finding]]:
    """``text`` with every credential-like value replaced by ``[REDACTED:<rule>]`` (the value
    alone where a rule names one: ``password=[REDACTED:password-assignment]``), and what was
    found. Rescanned until nothing is left (a replacement can uncover a neighbour)."""
    found = scan(text)
    if not found:
        return text, []
    text = _plain(text)  # a disguised credential is redacted as written out
    for m, decoded in reversed(list(_decoded_runs(text))):
        rules = sorted({rule for rule, _ in _matches(decoded)})
        if rules:
            text = text[:m.start()] + f"[REDACTED:{rules[0]}-base64]" + text[m.end():]
    for _round in range(5):
        spans = []
        for rule, m in _matches(text):
            span = m.span("value") if m.groupdict().get("value") is not None else m.span()
            spans.append((span[0], span[1], rule))
        if not spans:
            break
        out, pos = [], 0
        for start, end, rule in sorted(spans):
            if start < pos:  # overlaps one already replaced
                continue
            out += [text[pos:start], f"[REDACTED:{rule}]"]
            pos = end
        text = "".join(out) + text[pos:]
    return text, found


def _rules_for(text: str) -> list[tuple[Rule, int]]:
    """The rules that can match ``text`` (those with a needle in it, and those without needles
    unless _LONG_WORD_RULES rules them out), each with the position its search starts at: 0, or
    for a rule in _LEAD, its first needle's position less that rule's lead (the folded text has the
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
_LEAD = {"password-assignment": 7, "password-sentence": 0, "password-sentence-far": 0}
# The bare 40-character rule has no literal, but its match is 40 characters none of which is
# white space: a text whose whitespace-separated words are all shorter cannot hold one (98 % of
# synthetic memories; the split costs about half of the search it saves).
_LONG_WORD_RULES = frozenset({"aws-secret-access-key-bare", "discord-bot-token"})
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
