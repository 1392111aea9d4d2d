"""Nightly distill on realistic English and Chinese L1 logs."""
from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from memrepo.lifecycle.distill import Entry, KnownPattern, find_patterns, promote

NOW = datetime(2026, 11, 20, 23, 0, tzinfo=UTC)


def entry(id_: str, day: int, summary: str, body: str = "", *, session: str | None = None,
          hour: int = 10, subject: str = "user", fact: str | None = None,
          tags: tuple[str, ...] = ()) -> Entry:
    return Entry(id=id_, created=f"2026-11-{day:02d}T{hour:02d}:00:00+08:00",
                 session=session or f"sess-{day}-{hour}", subject=subject, fact=fact,
                 kind="event", summary=summary, body=body, tags=tags)


DARK_EN = [
    entry("en1", 3, "User prefers dark mode in the editor",
          "The user asked to switch VS Code to a dark colour scheme."),
    entry("en2", 9, "Switched the editor to dark theme again, user likes dark",
          "User said the light theme hurts their eyes at night."),
    entry("en3", 15, "User asked for dark mode in the editor again",
          "Changed editor theme to dark on request."),
]
DARK_ZH = [
    entry("zh1", 4, "用户又要求深色模式", "用户说晚上看浅色界面太刺眼，要求把编辑器切换成深色模式。"),
    entry("zh2", 11, "用户偏好编辑器使用深色主题", "把编辑器主题改成深色，用户说这样眼睛舒服。"),
    entry("zh3", 18, "用户再次把界面切换为深色模式", "用户不喜欢浅色主题。"),
]
NOISE = [
    entry("n01", 5, "Deployed release 2.3 to staging", "Pipeline green, migration ran in 40s."),
    entry("n02", 6, "Fixed flaky test in payment module",
          "Retry logic in the refund test was racing with the queue worker."),
    entry("n03", 7, "Discussed Q3 roadmap with Alice",
          "Priorities: search latency, Chinese support, onboarding."),
    entry("n04", 8, "Database connection pool exhausted during load test",
          "Raised max pool size from 10 to 50."),
    entry("n05", 12, "配置数据库连接池最大线程数", "把连接池上限从10调到50，压测通过。"),
    entry("n06", 13, "发布流水线超时，重试后成功", "构建镜像耗时过长。"),
    entry("n07", 14, "User wants answers in Chinese",
          "User wrote in Chinese and asked for replies in Chinese."),
    entry("n08", 16, "Reviewed pull request for the cache layer",
          "Suggested TTL of 5 minutes for user sessions."),
    entry("n09", 17, "Editor crashed when opening a large log file",
          "Increased the editor memory limit."),
    entry("n10", 19, "User prefers concise answers without preamble",
          "User said: skip the intro, get to the point."),
    entry("n11", 10, "周会讨论了下个迭代的优先级", "先做中文检索，再做权限审核。"),
    entry("n12", 2, "Rotated the staging TLS certificate", "Expires in 90 days; calendar reminder set."),
]


def members(result) -> list[tuple[str, ...]]:
    return [c.members for c in result.candidates]


def test_three_english_paraphrases_on_three_days_make_one_candidate():
    result = find_patterns(DARK_EN + NOISE, now=NOW)
    assert members(result) == [("en1", "en2", "en3")]
    cand = result.candidates[0]
    assert cand.id.startswith("pat_") and cand.layer == "L2" and cand.kind == "pattern"
    assert cand.days == ("2026-11-03", "2026-11-09", "2026-11-15")
    assert {"dark", "editor"} <= set(cand.shared_terms)
    assert "[[en1]]" in cand.body and "## Evidence" in cand.body
    assert cand.summary.startswith("Recurring (3 days):")
    assert [m["id"] for m in cand.explain["members"]] == ["en1", "en2", "en3"]
    assert all(s["score"] >= 0.3 for s in cand.explain["similarities"])


def test_three_chinese_paraphrases_make_one_candidate_in_chinese():
    result = find_patterns(DARK_ZH + NOISE, now=NOW)
    assert members(result) == [("zh1", "zh2", "zh3")]
    cand = result.candidates[0]
    assert "深色" in cand.shared_terms
    assert cand.summary.startswith("重复出现（3 天）")


def test_english_and_chinese_patterns_are_separate():
    result = find_patterns(DARK_EN + DARK_ZH + NOISE, now=NOW)
    assert sorted(members(result)) == [("en1", "en2", "en3"), ("zh1", "zh2", "zh3")]


def test_two_occurrences_are_not_a_pattern():
    assert find_patterns(DARK_EN[:2] + NOISE, now=NOW).candidates == ()


def test_three_on_the_same_day_and_session_are_not_a_pattern():
    same = [replace(e, created=f"2026-11-09T0{i + 1}:00:00+08:00", session="s1")
            for i, e in enumerate(DARK_EN)]
    assert find_patterns(same + NOISE, now=NOW).candidates == ()
    assert find_patterns(same + NOISE, now=NOW, count_by="session").candidates == ()


def test_distinct_sessions_on_one_day_count_when_asked():
    same_day = [replace(e, created=f"2026-11-09T0{i + 1}:00:00+08:00", session=f"s{i}")
                for i, e in enumerate(DARK_EN)]
    assert find_patterns(same_day, now=NOW).candidates == ()
    assert members(find_patterns(same_day, now=NOW, count_by="session")) == [
        ("en1", "en2", "en3")]
    assert len(find_patterns(same_day, now=NOW, count_by="day_or_session").candidates) == 1


def test_shared_fact_key_joins_entries_worded_differently():
    theme = [entry("f1", 2, "Editor theme set to dark", fact="ui.theme"),
             entry("f2", 6, "用户又要求深色模式", fact="ui.theme"),
             entry("f3", 12, "Night colours for the IDE please", fact="ui.theme")]
    result = find_patterns(theme + NOISE, now=NOW)
    assert members(result) == [("f1", "f2", "f3")]
    assert result.candidates[0].shared_fact == "user/ui.theme"


def test_unrelated_entries_do_not_cluster():
    result = find_patterns(NOISE, now=NOW)
    assert result.candidates == () and result.reinforcements == ()
    assert result.considered == len(NOISE)


def test_rerun_with_known_proposals_proposes_nothing_new():
    first = find_patterns(DARK_EN + DARK_ZH + NOISE, now=NOW)
    known = [KnownPattern(c.id, c.members, "proposed") for c in first.candidates]
    again = find_patterns(DARK_EN + DARK_ZH + NOISE, now=NOW, known=known)
    assert again.candidates == () and again.reinforcements == ()
    assert sorted(s.key for s in again.suppressed) == sorted(c.id for c in first.candidates)


def test_rejected_pattern_is_not_proposed_again():
    first = find_patterns(DARK_EN, now=NOW)
    known = [KnownPattern(first.candidates[0].id, first.candidates[0].members, "rejected")]
    more = DARK_EN + [entry("en4", 19, "Dark mode in the editor again, user insists")]
    again = find_patterns(more, now=NOW, known=known)
    assert again.candidates == () and again.reinforcements == ()
    assert again.suppressed[0].status == "rejected"


def test_new_occurrence_of_applied_pattern_is_a_reinforcement():
    first = find_patterns(DARK_EN + NOISE, now=NOW)
    cand = first.candidates[0]
    known = [KnownPattern(cand.id, cand.members, "applied", cand.shared_terms)]
    more = DARK_EN + NOISE + [entry("en4", 19, "User wants the editor in dark mode again",
                                    "Set the dark theme once more.")]
    again = find_patterns(more, now=NOW, known=known)
    assert again.candidates == ()
    assert [(r.key, r.new_members) for r in again.reinforcements] == [(cand.id, ("en4",))]


def test_key_is_stable_when_a_member_joins():
    first = find_patterns(DARK_EN, now=NOW).candidates[0]
    more = DARK_EN + [entry("en4", 19, "User wants the editor in dark mode again")]
    second = find_patterns(more, now=NOW).candidates[0]
    assert second.id == first.id and second.members == ("en1", "en2", "en3", "en4")


def test_same_input_in_any_order_gives_the_same_output():
    entries = DARK_EN + DARK_ZH + NOISE
    expected = find_patterns(entries, now=NOW)
    for seed in range(5):
        shuffled = entries[:]
        random.Random(seed).shuffle(shuffled)
        result = find_patterns(shuffled, now=NOW)
        assert result == expected
        assert [c.explain for c in result.candidates] == [c.explain for c in expected.candidates]


def test_malformed_entries_are_skipped_and_reported():
    bad = [replace(NOISE[0], id="b1", created=""),
           replace(NOISE[0], id="b2", created="last tuesday"),
           replace(NOISE[0], id="b3", created="2026-11-05T10:00:00"),  # no time zone
           replace(NOISE[0], id="b4", summary="", body="  "),
           replace(NOISE[0], id="b5", summary="的了", body="")]
    result = find_patterns(DARK_EN + bad, now=NOW)
    assert members(result) == [("en1", "en2", "en3")]
    reasons = {s.id: s.reason for s in result.skipped}
    assert set(reasons) == {"b1", "b2", "b3", "b4", "b5"}
    assert "missing created" in reasons["b1"] and "unparsable" in reasons["b2"]


def test_entries_outside_the_window_are_ignored():
    old = [replace(e, created=e.created.replace("2026-11", "2026-08")) for e in DARK_EN]
    result = find_patterns(old, now=NOW)
    assert result.candidates == () and result.out_of_window == 3


def test_promote_needs_more_occurrences():
    l2 = [replace(e, kind="pattern") for e in DARK_EN]
    assert promote(l2, now=NOW).candidates == ()
    l2 += [entry(f"en{i}", 12 + i, "User asked for dark mode in the editor again")
           for i in (4, 5)]
    cands = promote(l2, now=NOW).candidates
    assert len(cands) == 1 and cands[0].layer == "L3" and len(cands[0].members) == 5


def test_naive_now_is_refused():
    with pytest.raises(ValueError):
        find_patterns(DARK_EN, now=datetime(2026, 11, 20))


def test_two_preferences_in_the_same_words_stay_two_patterns():
    tabs = [entry("t1", 2, "User prefers tabs over spaces in Python files",
                  "Reformatted the module with tabs as the user asked."),
            entry("t2", 8, "Python indentation switched to tabs again, user likes tabs",
                  "Spaces were reverted to tabs."),
            entry("t3", 13, "User asked for tabs instead of spaces in Python again",
                  "Changed the formatter settings to tabs.")]
    result = find_patterns(DARK_EN + tabs + NOISE, now=NOW)
    assert sorted(members(result)) == [("en1", "en2", "en3"), ("t1", "t2", "t3")]
    assert len({c.id for c in result.candidates}) == 2
