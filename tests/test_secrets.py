"""The credential scanner on a corpus: every credential format is caught,
at most 1 % of prose (English and Chinese) is refused. bench/secrets.py prints the figures and
compares detect-secrets on the same corpus."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from secret_corpus import CODE, CREDENTIALS, DISGUISED, PROSE, PROSE_EN, PROSE_OTHER, PROSE_ZH

from memrepo.store import secretscan


def test_corpus_is_big_enough():
    assert len({name for name, _ in CREDENTIALS}) >= 40
    assert len(PROSE) >= 100 and len(PROSE_EN) >= 40 and len(PROSE_ZH) >= 40


@pytest.mark.parametrize("name,text", CREDENTIALS, ids=[n for n, _ in CREDENTIALS])
def test_every_credential_format_is_caught(name, text):
    assert secretscan.scan(text), name
    assert secretscan.scan(f"## Evidence\nsome words before\n{text}\nand after\n")


def test_prose_is_not_refused():
    refused = [t for t in PROSE if secretscan.scan(t)]
    assert len(refused) <= len(PROSE) // 100, refused


def test_code_that_names_a_secret_without_holding_it_passes():
    """os.environ["DB_PASSWORD"], secrets_client.get(...), ${DB_PASSWORD}: where a secret comes
    from is not a secret."""
    assert [t for t in CODE if secretscan.scan(t)] == []


@pytest.mark.parametrize("text", [
    "pwd: /home/alice/projects", "sk-hynix-hbm4-roadmap-2026-summary.pdf", "修改密码：进入账户设置页面后点击安全选项",
    "commit 3f030b1e2344e703441b27bbfe1639b0cdb5f997", "the password is on the whiteboard",
])
def test_named_prose_from_the_issue_passes(text):
    assert secretscan.scan(text) == []


def test_findings_never_echo_the_secret():
    name, text = next(c for c in CREDENTIALS if c[0] == "password-zh")
    [finding] = secretscan.scan(text)
    assert text.split()[-1] not in finding.message()


def test_add_refuses_a_credential_from_the_corpus(vault):
    text = dict(CREDENTIALS)["gitlab"]
    proc = subprocess.run([sys.executable, "-m", "memrepo", "--vault", str(vault.root), "add", "--summary", "ci",
                           "--body", text], capture_output=True, text=True)
    assert proc.returncode != 0 and "gitlab-token" in proc.stderr and text.split()[1] not in proc.stderr


# ---- the prefilter: a rule runs only when its needles occur, with exactly the findings of running every rule

# Patterns as they were before they were rewritten for speed (same matches, less work): the
# reference below runs these, so the rewrite is checked along with the prefilter.
ORIGINAL_PATTERNS: dict[str, str] = {
    "password-assignment":
        rf"(?i)(?:{secretscan._ASSIGN_KEYS})[\"']?\s*(?:=|:|：)\s*[\"']?(?P<value>[^\s\"',;，。]{{6,}})",
    "password-sentence":
        r"(?i)\b(?:password|passwd|passphrase|passcode|secret key|api key|token)\s+(?:is|was|=)\s*[:：]?\s*[\"'`]?"
        r"(?P<value>[!-~]{6,})",
}


def reference_scan(text: str) -> list[secretscan.Finding]:
    """The scan without a prefilter: every rule's (original) pattern over the whole text."""
    findings: dict[tuple[int, str], secretscan.Finding] = {}
    for rule, source, check, _ in secretscan.RULES:
        for m in re.compile(ORIGINAL_PATTERNS.get(rule, source)).finditer(text):
            value = m.groupdict().get("value")
            if check is not None and not check(value if value is not None else m.group(0)):
                continue
            line = text.count("\n", 0, m.start()) + 1
            findings.setdefault((line, rule), secretscan.Finding(rule, line, secretscan._mask(m.group(0))))
    return sorted(findings.values(), key=lambda f: (f.line, f.rule))


FILE = """---
id: mem_20261201_ab12cd
layer: L1
kind: event
subject: service-10
summary: {first}
status: active
tags:
  - "#ops"
created: "2026-12-01T10:00:00+00:00"
---
## What
{text}

## Evidence
- ops/runbook.md:40
"""


def _variants(text: str) -> list[str]:
    return [text, text.upper(), text.lower(), text.swapcase()]


def _corpus_texts() -> list[str]:
    texts = []
    for _, cred in CREDENTIALS:
        for prose in PROSE[::29]:
            texts += [f"{prose} {cred} {prose}", f"{prose}\n{cred}\n"]
        texts.append(FILE.format(first=cred.splitlines()[0], text=cred))
    for prose in PROSE:
        texts.append(FILE.format(first=prose, text=prose))
    return [v for t in [c for _, c in CREDENTIALS] + PROSE + texts for v in _variants(t)]


def test_prefiltered_scan_equals_every_rule_on_the_corpus():
    texts = _corpus_texts()
    assert len(texts) > 2000
    for text in texts:
        assert secretscan.scan(text) == reference_scan(text), text


# re's (?i) matches these to ASCII letters in ways str.lower() does not (or not as one character).
ODD_CASE = {"s": "ſ", "i": "ıİ", "k": "\u212a"}
_NEEDLES = sorted({n for *_, needles in secretscan.RULES for n in needles})
_KEYS = ["password", "passwd", "pwd", "passphrase", "passcode", "secret", "api_key", "apikey", "api key", "secret key",
         "access_token", "auth-token", "client_secret", "private_key", "PRIVATE KEY", "token", "authorization",
         "AccountKey", "SharedAccessSignature", "aws_secret_access_key", "Bearer", "密码", "口令", "密钥", "令牌"]


def _odd(word: str) -> list[str]:
    """``word`` with its s, i and k written as the odd characters, each way."""
    return ["".join(ODD_CASE[c][j % len(ODD_CASE[c])] if c in ODD_CASE else c for c in word.lower()) for j in range(2)]


_WORDS = sorted(set(_NEEDLES + _KEYS + [odd for w in _NEEDLES + _KEYS for odd in _odd(w)]))
_GLUE = ["=", ":", "：", " is ", " was ", "是", "为", '"', "'", "`", "“", " ", "\n", "://", "@", "/", ".", "-", "_", ",",
         "，", "。", "；", ": Bearer ", "=Basic "]
_B64_RUNS = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", min_size=1, max_size=60)
_VALUES = st.one_of(st.sampled_from(["Xy7kQ2mPz9", "hunter2!", "/home/alice", "changeme", "a1b2c3d4e5f6g7h8i9j0k1"]),
                    _B64_RUNS)
_ASSIGN = st.tuples(st.sampled_from(_WORDS), st.sampled_from(["=", ": ", " = ", "：", " is ", " was ", "是", '": "', ": Bearer "]),
                    _VALUES).map("".join)
_PIECE = st.one_of(
    st.sampled_from(_WORDS + _GLUE),
    _ASSIGN,
    _B64_RUNS,
    st.text(alphabet="0123456789abcdef", min_size=1, max_size=40),
    st.text(alphabet="密码口令钥是为就数据库的配置用户ſıİ\u212a !?.,:;=@/-_\t", max_size=12),
    st.text(max_size=6),
)
_TEXT = st.lists(st.tuples(_PIECE, st.sampled_from(["", " ", "\n", "。"])), max_size=12).map(
    lambda pieces: "".join(piece + sep for piece, sep in pieces))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_TEXT, case=st.sampled_from([str, str.upper, str.lower, str.swapcase]))
def test_prefiltered_scan_equals_every_rule_on_generated_text(text, case):
    text = case(text)
    assert secretscan.scan(text) == reference_scan(text)


EVERY_CODE_POINT = "".join(map(chr, range(sys.maxunicode + 1)))


def test_fold_keeps_every_needle_that_re_would_match():
    """For every code point re's (?i) matches to a character of a (?i) rule's needle, the folded
    text holds that character (so a needle lookup can never miss a match)."""
    every = EVERY_CODE_POINT
    chars = {c for _, source, _, needles in secretscan.RULES if re.compile(source).flags & re.IGNORECASE
             for n in needles for c in n}
    for c in chars:
        for m in re.finditer("(?i)" + re.escape(c), every):
            assert secretscan._fold(m.group()) == c, (c, hex(ord(m.group())))
    assert len(secretscan._fold(every)) == len(every)  # positions in the folded text are the text's


@pytest.mark.parametrize("rule,keys", [
    ("password-assignment", secretscan._ASSIGN_KEYS.split("|")),
    ("password-sentence", ["password", "passwd", "passphrase", "passcode", "secret key", "api key", "token"]),
])
def test_lookahead_admits_every_character_re_matches_to_a_first_letter(rule, keys):
    """The (?=[…]) before the keys lets through exactly the characters that start a key under (?i)."""
    pattern = next(source for name, source, *_ in secretscan.RULES if name == rule)
    lookahead = re.search(r"\(\?=(\[[^]]+\])\)", pattern).group(1)
    firsts = "".join(sorted({key[0] for key in keys}))
    assert sorted(lookahead[1:-1]) == sorted(firsts)
    by_class = [m.start() for m in re.finditer("(?i)" + lookahead, EVERY_CODE_POINT)]
    by_literal = [m.start() for m in re.finditer("(?i)" + "|".join(firsts), EVERY_CODE_POINT)]
    assert by_class == by_literal


@pytest.mark.parametrize("text", [
    "paſsword: Xy7kQ2mPz", "PRİVATE_KEY=Xy7kQ2mPz9", "ſecret_key = Xy7kQ2mPz9", "apı_key: Xy7kQ2mPz9",
    "AUTHORİZATİON: Bearer a1b2c3d4e5f6g7h8i9j0", "the paſsword is Xy7kQ2mPz", "api \u212aey is Xy7kQ2mPz",
])
def test_odd_case_characters_are_still_found(text):
    assert secretscan.scan(text) == reference_scan(text) != []


@pytest.mark.parametrize("text", PROSE_EN[18:21] + [PROSE_EN[28]] + PROSE_EN[30:35] + PROSE_ZH[6:12])
def test_plain_prose_runs_no_rule(text):
    assert secretscan._rules_for(text) == []
    assert {rule[0] for rule, _ in secretscan._rules_for(text + " " + "x" * 40)} == secretscan._LONG_WORD_RULES


def test_a_needle_brings_its_rule_in():
    ran = {rule[0] for rule, _ in secretscan._rules_for("the PassWord is on the whiteboard, see https://x.example")}
    assert {"password-assignment", "password-sentence", "url-credentials"} <= ran
    assert "github-token" not in ran and "password-sentence-zh" not in ran


def test_only_the_rules_that_run_are_compiled():
    assert all(source.startswith("(?i)") == bool(re.compile(source).flags & re.IGNORECASE)
               for _, source, *_ in secretscan.RULES)  # how _rules_for tells a (?i) rule without compiling it
    secretscan._compiled.cache_clear()
    secretscan.scan("The design review moved to Friday at 10:00.")
    assert secretscan._compiled.cache_info().currsize == 0
    secretscan.scan("the password is on the whiteboard")
    assert secretscan._compiled.cache_info().currsize == 3  # password-assignment, password-sentence(-far)


def test_a_key_holds_its_needle_within_the_lead():
    """password-assignment starts its search 7 characters before its first needle: every spelling
    of every key must hold a needle that near its start."""
    rule = next(r for r in secretscan.RULES if r[0] == "password-assignment")
    keys = [k.replace("[_-]?", sep) for k in secretscan._ASSIGN_KEYS.split("|") for sep in ("", "_", "-")]
    lead = secretscan._LEAD["password-assignment"]
    for key in set(keys):
        assert min(i for i in map(key.find, rule[3]) if i >= 0) <= lead, key
    assert secretscan._LEAD["password-sentence"] == 0  # its keys begin with pass, secret key, api key, token


@pytest.mark.parametrize("text", [
    "x" * 30 + " access_token: Xy7kQ2mPz9", "CLIENT_SECRET=Xy7kQ2mPz9 and password: Ab3dEf6hIj", "passcode and then api_key=Xy7kQ2mPz9",
    "tokens: many\nclient-secret: Xy7kQ2mPz9", "the old password was hunter2x and the token is Xy7kQ2mPz9",
])
def test_a_late_start_finds_what_a_full_search_finds(text):
    assert secretscan.scan(text) == reference_scan(text) != []


@pytest.mark.parametrize("text", [
    "密钥在这里" + CREDENTIALS[2][1].split()[4] + "之后还有文字", CREDENTIALS[2][1].split()[4],
    "key\u3000" + CREDENTIALS[2][1].split()[4] + "\u3000done", "(" + CREDENTIALS[2][1].split()[4] + ")",
])
def test_a_bare_40_character_secret_is_found_in_any_surroundings(text):
    assert secretscan.scan(text) == reference_scan(text) != []


@pytest.mark.parametrize("name,text", DISGUISED, ids=[n for n, _ in DISGUISED])
def test_a_disguised_credential_is_caught(name, text):
    assert secretscan.scan(text), text


@pytest.mark.parametrize("text", PROSE_OTHER)
def test_prose_about_passwords_in_other_languages_passes(text):
    assert secretscan.scan(text) == [], text


@pytest.mark.parametrize("name,text", DISGUISED, ids=[n for n, _ in DISGUISED])
def test_redaction_leaves_no_disguised_credential(name, text):
    redacted, found = secretscan.redact(text)
    assert found and "[REDACTED:" in redacted
    assert secretscan.scan(redacted) == [], redacted
