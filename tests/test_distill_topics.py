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
