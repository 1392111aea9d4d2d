"""Strict inputs: unknown filter values and bad dates are usage
errors (exit 2) with the accepted values, not empty results; config.toml is checked on load."""
from __future__ import annotations

import json

import pytest

from memrepo import api, model
from memrepo.cli.app import main
from memrepo.errors import ConfigError, ConfigWarning, UsageError
from memrepo.review import writes as memories


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def filled(vault):
    memories.add(vault, {"subject": "proj", "summary": "the build uses make"}, "the build uses make")
    return vault


@pytest.mark.parametrize("args, said", [
    (["list", "--layer", "L9"], "--layer 'L9' is not one of L1, L2, L3, L4"),
    (["list", "--status", "actve"], "did you mean 'active'?"),
    (["list", "--kind", "Decision"], "did you mean 'decision'?"),
    (["search", "build", "--layer", "l1"], "did you mean 'L1'?"),
    (["search", "build", "--kind", "evnt"], "did you mean 'event'?"),
    (["search", "build", "--since", "garbage"], "is not a date: use YYYY-MM-DD"),
    (["search", "build", "--since", "2026-13-45"], "is not a date"),
    (["search", "build", "--since", "2026-12-01T10:00:00"], "with a zone"),
    (["search", "build", "--log"], "give --session"),
    (["add", "--kind", "gossip", "--summary", "s", "--body", "b"], "--kind 'gossip' is not one of"),
    (["add", "--source", "usr", "--summary", "s", "--body", "b"], "did you mean 'user'?"),
    (["add", "--expires", "soon", "--summary", "s", "--body", "b"], "--expires 'soon' is not a date"),
    (["distill", "--now", "yesterday"], "not a date"),
    (["search", "build", "--intent", "histroy"], "--intent 'histroy' is not one of fact, general, howto, history; did you mean 'history'?"),
    (["recall", "build", "--intent", "Fact"], "did you mean 'fact'?"),
    (["apply", "prop_nothing", "--mode", "apend"], "--mode 'apend' is not one of overwrite, append; did you mean 'append'?"),
    (["schedule", "--kind", "sytemd"], "--kind 'sytemd' is not one of cron, systemd; did you mean 'systemd'?"),
    (["schedule", "--install", "--kind", "Cron"], "did you mean 'cron'?"),  # never installs a cron line for a typo
    (["graph", "--export", "g.out", "--format", "dott"], "--format 'dott' is not one of graphml, dot; did you mean 'dot'?"),
    (["export", "--to", "jsonll"], "--to 'jsonll' is not one of openclaw, jsonl; did you mean 'jsonl'?"),
    (["flush", "--prompt", "--lang", "ZH"], "--lang 'ZH' is not one of en, zh; did you mean 'zh'?"),
])
def test_bad_option_values_are_usage_errors(filled, capsys, args, said):
    head = filled.head()
    code, out, err = run(capsys, "--vault", str(filled.root), *args)
    assert code == 2 and out == "" and said in err and err.count("\n") == 1, err
    code, out, err = run(capsys, "--vault", str(filled.root), *args, "--json")
    assert code == 2 and json.loads(out)["error"]["code"] == "usage" and said in json.loads(out)["error"]["message"]
    assert filled.head() == head


def test_good_values_still_work(filled, capsys):
    code, out, _ = run(capsys, "--vault", str(filled.root), "search", "build", "--layer", "L1", "--since", "2020-01-01",
                       "--json")
    assert code == 0 and json.loads(out)["hits"]
    code, out, _ = run(capsys, "--vault", str(filled.root), "search", "build", "--since", "2020-01-01T00:00:00Z", "--json")
    assert code == 0 and json.loads(out)["hits"]
    code, out, _ = run(capsys, "--vault", str(filled.root), "add", "--summary", "x", "--body", "x",
                       "--expires", "2030-01-01", "--json")
    assert code == 0
    assert filled.get(json.loads(out)["id"]).meta["expires"].startswith("2030-01-01T00:00:00")
    code, out, _ = run(capsys, "--vault", str(filled.root), "schedule", "--kind", "cron")
    assert code == 0


def test_intent_forces_the_route(filled, capsys):
    """A short query is guessed to be a fact lookup; --intent history takes the history route,
    which also shows the superseded version."""
    old = memories.add(filled, {"subject": "ui", "fact": "theme", "summary": "ui theme dark"}, "ui theme dark").id
    second = memories.add(filled, {"subject": "ui", "fact": "theme", "summary": "ui theme light"}, "ui theme light")
    if second.proposal:  # a change of a fact may wait for review
        api.apply(filled, second.proposal)
    new = second.id
    code, out, _ = run(capsys, "--vault", str(filled.root), "search", "ui theme", "--json")
    guessed = json.loads(out)
    assert code == 0 and guessed["intent"] == "fact" and [h["id"] for h in guessed["hits"]] == [new]
    code, out, _ = run(capsys, "--vault", str(filled.root), "search", "ui theme", "--intent", "history", "--json")
    forced = json.loads(out)
    assert code == 0 and forced["intent"] == "history" and sorted(h["id"] for h in forced["hits"]) == sorted([new, old])
    result, _ = api.search(filled, "ui theme", intent="general")
    assert result.intent == "general"


def test_the_library_refuses_the_same_values(filled):
    with pytest.raises(UsageError, match="did you mean 'active'"):
        filled.list(status="actve")
    with pytest.raises(UsageError, match="not a date"):
        api.search(filled, "build", since="2026-13-45")
    with pytest.raises(UsageError, match="--session"):
        api.search(filled, "build", log_recalls=True)


def test_model_kinds_are_the_schema_kinds():
    from memrepo.store import schema
    assert list(model.KINDS) == schema.schema()["properties"]["kind"]["enum"]


def test_a_subject_nobody_has_is_said(filled, capsys):
    code, out, _ = run(capsys, "--vault", str(filled.root), "list", "--subject", "nobody")
    assert code == 0 and "no memory has subject 'nobody'" in out


# ----------------------------------------------------------------- config.toml

def write_config(vault, text: str) -> None:
    (vault.root / ".memrepo" / "config.toml").write_text(text, encoding="utf-8")
    vault._config = None


@pytest.mark.parametrize("text, said", [
    ('[distill]\nsimilarity = "high"\n', "distill.similarity: must be a number (default 0.2), not 'high'"),
    ("[distill]\nsimilarity = 3\n", "distill.similarity: must be between 0.0 and 1.0"),
    ('[distill]\ncount_by = "week"\n', "'week' is not one of day, session, day_or_session"),
    ('[risk]\nhigh_kinds = ["constrant"]\n', "risk.high_kinds: 'constrant' is not one of"),
    ("[vault]\nlock_timeout = true\n", "vault.lock_timeout: must be a number"),
    ('cleanup = "archive"\n', "cleanup: must be a [cleanup] table"),
    ("[distill\n", "TOML syntax"),
])
def test_a_bad_config_value_names_the_key_and_what_is_accepted(vault, capsys, text, said):
    write_config(vault, text)
    with pytest.raises(ConfigError, match=None) as e:
        assert vault.config is not None
    assert said in str(e.value)
    code, _, err = run(capsys, "--vault", str(vault.root), "distill", "--dry-run")
    assert code == 5 and said in err and "Traceback" not in err


def test_unknown_config_keys_are_warned_with_the_nearest_known_key(vault, capsys):
    write_config(vault, "[distill]\nsimilarty = 0.3\n[decy]\nalpha = 0.5\n")
    with pytest.warns(ConfigWarning, match="distill.similarty is ignored; did you mean 'similarity'"):
        assert vault.config is not None
    code, _, err = run(capsys, "--vault", str(vault.root), "distill", "--dry-run")
    assert code == 0
    assert "warning: .memrepo/config.toml: unknown key distill.similarty is ignored; did you mean 'similarity'?" in err
    assert "unknown table [decy] is ignored; did you mean 'decay'?" in err
    assert err.count("similarty") == 1


def test_the_default_config_is_clean(vault):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vault._config = None
        assert vault.config.get("distill", "similarity") == 0.2


def test_every_config_key_the_code_reads_is_in_the_schema():
    """A key read in code but missing from config.DEFAULTS/OPTIONAL would be warned as unknown."""
    import re
    from pathlib import Path

    from memrepo import config
    package = Path(config.__file__).parent
    read = set()
    for path in package.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        read |= set(re.findall(r"config\.get\(\s*\"(\w+)\",\s*\"(\w+)\"", text))
        read |= {(t, None) for t in re.findall(r"config\.section\(\s*\"(\w+)\"", text)}
    assert ("search", "semantic") in read or ("vault", "lock_timeout") in read
    for table, key in read:
        known = {**config.DEFAULTS.get(table, {}), **config.OPTIONAL.get(table, {})}
        assert known, f"[{table}] is read by the code but is not in memrepo.config"
        assert key is None or key in known, f"{table}.{key} is read by the code but is not in memrepo.config"
