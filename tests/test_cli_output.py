"""Output for people: aligned columns by display width (CJK takes two cells), truncation with
an ellipsis on a terminal only, emphasis never with NO_COLOR, snippets without markdown."""
from __future__ import annotations

import os
import sys

from conftest import on_a_terminal

from memrepo.cli import output
from memrepo.cli.app import main
from memrepo.review import writes as memories


def test_display_width_counts_wide_characters_twice():
    assert output.display_width("abc") == 3
    assert output.display_width("数据库") == 6
    assert output.display_width("e\u0301") == 1


def test_columns_line_up_by_display_width():
    text = output.table(["SUBJECT", "SUMMARY"], [["项目", "one"], ["general", "two"]], width=None)
    lines = text.splitlines()
    assert [output.display_width(line.split("  ")[0]) for line in lines] == [7, 4, 7]
    starts = {output.display_width(line[:line.rindex(word)]) for line, word in zip(lines, ["SUMMARY", "one", "two"])}
    assert len(starts) == 1, text


def test_the_last_column_is_cut_to_the_width_with_an_ellipsis():
    text = output.table(["ID", "SUMMARY"], [["m1", "数据库连接池" * 10]], width=30)
    assert all(output.display_width(line) <= 30 for line in text.splitlines())
    assert text.endswith("…")
    assert output.truncate("short", 10) == "short"


def test_markdown_markup_leaves_snippets():
    assert output.plain("## Decision **Ship** `2.3` after [the runbook](http://x) and [[mem_a|A]]") == \
        "Decision Ship 2.3 after the runbook and mem_a"
    assert output.plain("- one\n- *two*") == "one two"


def test_list_has_a_header_and_piped_output_keeps_everything(vault, capsys):
    long = "a summary that is much longer than any terminal is wide " * 4
    memories.add(vault, {"subject": "项目", "summary": long.strip()}, "b")
    assert main(["--vault", str(vault.root), "list"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ID ") and "SUMMARY" in out.splitlines()[0] and long.strip() in out and "\033" not in out


def _on_a_terminal(vault, env) -> str:
    return on_a_terminal([sys.executable, "-m", "memrepo", "--vault", str(vault.root), "list"], env=env)


def test_on_a_terminal_rows_fit_and_no_color_turns_emphasis_off(vault):
    memories.add(vault, {"subject": "s", "summary": "word " * 60}, "b")
    env = {**os.environ, "COLUMNS": "70", "PYTHONPATH": os.getcwd()}
    env.pop("NO_COLOR", None)
    shown = _on_a_terminal(vault, env)
    assert "\033[1m" in shown and "…" in shown
    assert all(output.display_width(line) <= 70 for line in shown.replace("\033[1m", "").replace("\033[0m", "").splitlines())
    assert "\033[" not in _on_a_terminal(vault, {**env, "NO_COLOR": "1"})


def test_init_and_add_without_a_git_identity_warn_once_with_the_fix(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "empty-gitconfig"))
    for key in ("GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL"):
        monkeypatch.delenv(key, raising=False)
    from memrepo.store import git
    git.identity.cache_clear()
    assert main(["init", str(tmp_path / "v")]) == 0
    err = capsys.readouterr().err
    assert err.count("warning: no git identity is set") == 1 and "git config --global user.name" in err
    git.identity.cache_clear()
    assert main(["--vault", str(tmp_path / "v"), "add", "--summary", "s", "--body", "b"]) == 0
    assert capsys.readouterr().err.count("warning: no git identity is set") == 1
    git.identity.cache_clear()
