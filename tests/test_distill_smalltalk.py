"""Small talk never becomes a pattern, one speaker per pattern, paraphrases still join,
candidates read as statements, ranked and capped, with near misses explained."""
from __future__ import annotations

from datetime import UTC, datetime

from memrepo.lifecycle.distill import Entry, find_patterns
from memrepo.lifecycle.smalltalk import content_sentences, sentence_kind

NOW = datetime(2026, 11, 30, 23, 0, tzinfo=UTC)


def turn(id_: str, day: int, speaker: str, text: str, subject: str = "conv-1") -> Entry:
    body = f"{speaker}: {text}"
    return Entry(id=id_, created=f"2026-11-{day:02d}T10:00:00+00:00", session=None, subject=subject,
                 fact=None, kind="event", summary=" ".join(body.split())[:80], body=body,
                 tags=("chat", f"session-{day}", f"speaker-{speaker.lower()}"))


def test_english_small_talk_sentences_are_recognised():
    for text, kind in [("Hey Mel! Long time no talk!", "greeting"), ("Thanks, Nate! Your support means a lot.", "thanks"),
                       ("Take care! Talk soon!", "farewell"), ("Congrats on the win, so proud of you!", "congratulations"),
                       ("Keep it up, you got this!", "encouragement"), ("Wow, that's awesome!", "back-channel")]:
        kept, kinds = content_sentences(text, frozenset({"mel", "nate"}))
        assert kept == [] and kinds[0] == kind, text
    kept, _ = content_sentences("Thanks, Nate! I finally finished my first full screenplay.", frozenset({"nate"}))
    assert kept == ["I finally finished my first full screenplay."]


def test_chinese_small_talk_sentences_are_recognised():
    for text in ["你好！", "谢谢你！", "加油！", "辛苦了！", "回头聊！", "好久不见，最近怎么样？", "恭喜恭喜！"]:
        kept, kinds = content_sentences(text)
        assert kept == [] and kinds, text
    assert sentence_kind("我每周六都去陶艺课做碗。") is None
    assert sentence_kind("用户又要求深色模式") is None


SMALL_TALK = [turn(f"s{d}", d, "Ana", t) for d, t in [
    (2, "Hey Ben! Long time no talk, how's it going?"), (5, "Thanks, Ben! Your support means a lot."),
    (8, "Take care! Can't wait to catch up. Talk soon!"), (11, "Hey Ben! Good to see you! How have you been?"),
    (14, "Thanks so much, Ben! That means a lot."), (17, "Congrats, Ben! So proud of you!"),
    (20, "Hi Ben! What's new?"), (23, "Thank you, Ben, I appreciate it!"), (26, "Wow, that's awesome! Keep it up!")]]
SMALL_TALK_ZH = [turn(f"z{d}", d, "小明", t) for d, t in [
    (3, "你好！好久不见！"), (6, "谢谢你！辛苦了！"), (9, "加油！回头聊！"), (12, "你好！最近怎么样？"),
    (15, "谢谢！辛苦了"), (18, "加油加油！"), (21, "回头聊！晚安！")]]
POTTERY = [turn("p1", 4, "Ana", "I signed up for a pottery class; I made my first clay bowl."),
           turn("p2", 10, "Ana", "My pottery teacher showed me how to glaze the clay bowl."),
           turn("p3", 16, "Ana", "Finished another clay bowl at pottery class, the glaze came out blue.")]
FILLER = [turn(f"f{d}", d, "Ben", t) for d, t in [
    (4, "The bus to the stadium was late again because of roadworks downtown."),
    (7, "I fixed the leaking kitchen tap with a new washer."), (13, "Our team lost the chess match on the last move."),
    (19, "I repainted the garden fence green over the weekend."), (22, "The library extended opening hours to nine.")]]


def test_small_talk_in_both_languages_never_becomes_a_pattern():
    result = find_patterns(SMALL_TALK + SMALL_TALK_ZH + POTTERY + FILLER, now=NOW, explain=True)
    assert [c.members for c in result.candidates] == [("p1", "p2", "p3")]
    assert result.small_talk == len(SMALL_TALK) + len(SMALL_TALK_ZH)
    reasons = {n["reason"] for n in result.near_misses}
    assert {"small talk (greeting)", "small talk (thanks)"} <= reasons


def test_two_speakers_saying_similar_things_do_not_join():
    ben = [turn("b1", 6, "Ben", "I signed up for a pottery class and made a clay bowl."),
           turn("b2", 12, "Ben", "My pottery teacher showed me how to glaze a clay bowl.")]
    ana = POTTERY[:2]
    result = find_patterns(ana + ben + FILLER, now=NOW, explain=True)
    assert result.candidates == ()  # two days each: neither speaker recurs on three
    assert any(n["reason"].startswith("different speakers") for n in result.near_misses)
    result = find_patterns(POTTERY + ben + FILLER, now=NOW)
    assert [(c.members, c.speaker) for c in result.candidates] == [(("p1", "p2", "p3"), "Ana")]


def test_paraphrased_recurrences_still_join():
    said = [turn("q1", 3, "Tom", "Took my pet turtles out to the garden, they love the sun."),
            turn("q2", 9, "Tom", "Watching my pet turtle swim calms me down."),
            turn("q3", 15, "Tom", "Bought a bigger tank for the turtles; my pets seem happier."),
            turn("q4", 18, "汤姆", "我的宠物乌龟今天晒太阳，很可爱。"),
            turn("q5", 21, "汤姆", "给宠物乌龟换了一个更大的缸。"),
            turn("q6", 24, "汤姆", "每天看着我的乌龟宠物，心情很放松。")]
    result = find_patterns(said + FILLER, now=NOW)
    assert sorted(c.members for c in result.candidates) == [("q1", "q2", "q3"), ("q4", "q5", "q6")]


def test_candidate_reads_as_a_statement_with_days_and_excerpts():
    result = find_patterns(SMALL_TALK + POTTERY + FILLER, now=NOW)
    cand = result.candidates[0]
    assert cand.summary.startswith("Recurring (3 days): Ana: ") and "pottery" in cand.summary.lower()
    assert "Hey" not in cand.summary
    assert "2026-11-04, 2026-11-10, 2026-11-16" in cand.body
    assert "[[p1]] 2026-11-04: I signed up for a pottery class" in cand.body
    assert cand.score > 3 and "Ana on 3 distinct days" in cand.why


def test_candidates_are_ranked_and_capped_per_subject():
    topics = ["pottery clay bowl glaze", "violin concerto rehearsal orchestra", "marathon running shoes training",
              "garden tomatoes compost seedlings"]
    entries = [turn(f"t{k}_{d}", d, "Ana", f"Today: {t}, day {d} notes on {t.split()[0]}.")
               for k, t in enumerate(topics) for d in (3 + k, 10 + k, 17 + k, 24 + k)[: 3 + (k == 0)]]
    result = find_patterns(entries + FILLER, now=NOW, max_per_subject=2)
    assert len(result.candidates) == 2 and len(result.capped) == 2
    assert any(c.members[0].startswith("t0_") for c in result.candidates)  # four days: ranked first
    assert min(c.score for c in result.candidates) >= max(c.score for c in result.capped)


def test_reactions_to_the_other_speaker_are_not_a_pattern_of_theirs():
    ben = [turn("r1", 5, "Ben", "Your pottery bowls look amazing, what glaze did you use?"),
           turn("r2", 11, "Ben", "You should sell your pottery bowls at the market."),
           turn("r3", 17, "Ben", "How is the pottery class going? Did the clay bowls come out of the kiln?")]
    result = find_patterns(POTTERY + ben + FILLER, now=NOW, explain=True)
    assert [(c.members, c.speaker) for c in result.candidates] == [(("p1", "p2", "p3"), "Ana")]
    assert any(n["reason"].startswith("not about the speaker") for n in result.near_misses)


def test_an_opening_interjection_is_not_part_of_the_statement():
    kept, _ = content_sentences("Hey Nate, my favorite dairy-free treat is this chocolate tart.")
    assert kept == ["My favorite dairy-free treat is this chocolate tart."]
