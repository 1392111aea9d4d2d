"""Distill keeps a conversation's main topic: a term one speaker uses on most days is that
speaker's recurring topic, while a term both use everywhere still says nothing."""
from __future__ import annotations

from datetime import UTC, datetime

from test_distill_smalltalk import turn

from memrepo.lifecycle.distill import find_patterns

NOW = datetime(2026, 11, 30, 23, 0, tzinfo=UTC)

JON = [  # the dance studio he is opening comes up on 8 of 12 days
    (1, "Getting my dance studio ready for the opening."),
    (2, "Found a location for the studio opening."),
    (4, "Studio opening night needs music."),
    (5, "The studio floor is done for the opening."),
    (7, "The studio opening went great."),
    (8, "Hired a teacher after the studio opening."),
    (10, "First review of the studio since the opening."),
    (11, "Summer camp at the studio after the opening."),
]
GINA = [  # her clothing store, on every day
    (day, f"My online clothing store {what}. Coffee helps.")
    for day, what in ((1, "sold a new jacket design"), (2, "added jacket ads"), (3, "launched a website"),
                      (4, "ran jacket ads"), (5, "got a new jacket supplier"), (6, "shipped jackets"),
                      (7, "hit a sales record"), (8, "got reviews"), (9, "added a new jacket line"),
                      (10, "redid the website"), (11, "opened a jacket popup"), (12, "hired a designer"))
]
OTHER = [(3, "Rainy day, I stayed in and cooked soup with my brother."),
         (6, "I read a novel about sailors."),
         (9, "Went hiking with my brother in the hills."),
         (12, "Cooked soup again, my brother loved it.")]


def conversation():
    """Both say "coffee" every day: a word of both, everywhere, says nothing."""
    return ([turn(f"j{d}", d, "Jon", f"{t} Coffee helps.") for d, t in JON + OTHER]
            + [turn(f"g{d}", d, "Gina", t) for d, t in GINA])


def test_the_main_topic_one_speaker_keeps_coming_back_to_is_a_candidate():
    result = find_patterns(conversation(), now=NOW)
    by_speaker = {c.speaker: c for c in result.candidates}
    assert "studio" in by_speaker["Jon"].shared_terms
    assert all(m.startswith("j") for m in by_speaker["Jon"].members)
    assert "jacket" in by_speaker["Gina"].shared_terms
    assert not any("coffe" in c.shared_terms for c in result.candidates)


def test_without_the_speaker_rule_the_main_topic_is_dropped_as_everywhere():
    result = find_patterns(conversation(), now=NOW, speaker_share=2.0)
    assert not any("studio" in c.shared_terms for c in result.candidates)


def test_a_summary_cut_in_the_middle_of_a_word_adds_no_fragment():
    """An importer's summary is often the turn's first 80 characters: its last word, cut in
    two, is no word (counted twice as the gist, "pa" or "gett" would join unrelated turns)."""
    from memrepo.lifecycle.distill_terms import prepare
    entry = turn("t1", 1, "Caroline", "I signed up for an evening class at the community centre and I love painting with friends.")
    assert entry.summary.endswith(" love pa")                  # "Caroline: I signed … I love pa"
    docs, *_ = prepare([entry], now=NOW, window_days=30)
    assert "pa" not in docs[0].counts
    assert docs[0].counts["paint"] == 1 and docs[0].counts["centr"] == 3   # the body once, the summary twice
    whole = turn("t2", 1, "Caroline", "My pottery class was so relaxing today.")
    docs, *_ = prepare([whole], now=NOW, window_days=30)
    assert docs[0].counts["potteri"] == 3                       # an uncut summary still counts twice


CAROLINE = [  # counselling, her career plan, on four of fourteen days: twice in like words, twice among others
    (1, "I want a career in counseling, maybe in Denver."),
    (2, "Counseling is the career for me, my aunt agrees."),
    (6, "Spent the morning reading about school counseling programs, then painted a sunset mural with "
        "acrylics, baked rye bread for the neighbours, fixed my bike chain, repotted the ferns, sorted "
        "old photos, wrote postcards to cousins and tuned the piano; a career step at last."),
    (10, "The library had a workshop on grief counseling, and afterwards I walked the dog along the "
         "harbour, bought tulips, cleaned the garage, washed the van, mended a sweater, called grandma, "
         "tried a ramen stall and planned the career fair booth."),
]
MELANIE = [(d, f"Day {d}: {what}") for d, what in enumerate((
    "pottery class with the kids", "camping by the lake", "violin practice", "a beach picnic",
    "reading a novel", "painting the fence", "a concert downtown", "baking cookies", "a hike in the hills",
    "a soccer match", "gardening tomatoes", "a museum visit", "a bike ride", "a family dinner"), start=1)]
FILL = [(d, f"Weather on day {d}: {w}.") for d, w in ((3, "rain and wind"), (4, "sunny skies"), (5, "fog at dawn"),
                                                   (7, "snow flurries"), (8, "a heat wave"), (9, "hail"),
                                                   (11, "drizzle"), (12, "clear night"), (13, "storm"), (14, "mild"))]


def counselling():
    return ([turn(f"c{d}", d, "Caroline", t) for d, t in CAROLINE + FILL]
            + [turn(f"m{d}", d, "Melanie", t) for d, t in MELANIE])


def test_a_speakers_own_words_count_every_day_she_says_them():
    result = find_patterns(counselling(), now=NOW)
    found = [c for c in result.candidates if "counsel" in c.shared_terms]
    assert len(found) == 1 and found[0].speaker == "Caroline"
    assert set(found[0].members) == {"c1", "c2", "c6", "c10"} and found[0].occurrences == 4


def test_without_the_speaker_rule_two_days_are_too_few():
    result = find_patterns(counselling(), now=NOW, speaker_share=2.0)
    assert not any("counsel" in c.shared_terms for c in result.candidates)


def test_nothing_is_grown_by_a_word_both_speakers_use():
    both = counselling() + [turn(f"mc{d}", d, "Melanie", f"My sister's career counseling {what}.")
                            for d, what in ((4, "job went well"), (9, "office moved"))]
    assert not any("counsel" in c.shared_terms for c in find_patterns(both, now=NOW).candidates)
