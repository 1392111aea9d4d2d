"""The credential scanner on a corpus (issue 9, case 16): every credential format is caught,
at most 1 % of prose (English and Chinese) is refused. bench/secrets.py prints the figures and
compares detect-secrets on the same corpus."""
from __future__ import annotations

import subprocess
import sys

import pytest
from secret_corpus import CREDENTIALS, PROSE, PROSE_EN, PROSE_ZH

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
