"""Dates in questions and memories (memrepo.retrieval.dates): the period a question names, the
days a memory's relative dates resolve to against the day it was observed, "when" questions."""
from __future__ import annotations

from datetime import date

import pytest

from memrepo.retrieval import dates

D = date


@pytest.mark.parametrize("question, span", [
    ("What did Melanie paint on October 13, 2023?", (D(2023, 10, 13), D(2023, 10, 13))),
    ("What did Gina find for her store on 1 February, 2023?", (D(2023, 2, 1), D(2023, 2, 1))),
    ("What is John doing as a volunteer in August 2023?", (D(2023, 8, 1), D(2023, 8, 31))),
    ("Which performances did John achieve in 2023?", (D(2023, 1, 1), D(2023, 12, 31))),
    ("Where was Tim in the week before 16 November 2023?", (D(2023, 11, 9), D(2023, 11, 15))),
    ("What did John do the week before August 3, 2023?", (D(2023, 7, 27), D(2023, 8, 2))),
    ("What happened on 2024-02-29?", (D(2024, 2, 29), D(2024, 2, 29))),
    ("2023年5月我们去了哪里？", (D(2023, 5, 1), D(2023, 5, 31))),
    ("2023年10月13日发生了什么", (D(2023, 10, 13), D(2023, 10, 13))),
])
def test_a_question_names_a_period_with_absolute_dates(question, span):
    assert dates.asked_span(question) == dates.Asked(span=span)


def test_a_month_without_a_year_is_that_month_in_any_year():
    asked = dates.asked_span("When did Melanie go camping in June?")
    assert asked == dates.Asked(month=6)
    assert asked.covers(((D(2021, 6, 30), D(2021, 6, 30)),))
    assert not asked.covers(((D(2021, 7, 1), D(2021, 7, 3)),))


@pytest.mark.parametrize("question", [
    "What did Caroline do last week?",      # no day to resolve "last week" against
    "How does the deploy pipeline work?",
    "I may 2 things later",                  # not a date
    "今天我拿到了满分",
])
def test_a_question_without_an_absolute_date_names_no_period(question):
    assert dates.asked_span(question) is None


OBSERVED = D(2023, 11, 16)   # a Thursday


@pytest.mark.parametrize("text, span", [
    ("I went to a castle during my trip to the UK last Friday", (D(2023, 11, 10), D(2023, 11, 10))),
    ("I went to a support group yesterday", (D(2023, 11, 15), D(2023, 11, 15))),
    ("the roadtrip this past weekend was insane", (D(2023, 11, 11), D(2023, 11, 12))),
    ("I joined an online group last week", (D(2023, 11, 6), D(2023, 11, 12))),
    ("I moved two weeks ago", (D(2023, 10, 30), D(2023, 11, 5))),
    ("I started last month", (D(2023, 10, 1), D(2023, 10, 31))),
    ("We met on 8 May 2023", (D(2023, 5, 8), D(2023, 5, 8))),
    ("We met on May 8", (D(2023, 5, 8), D(2023, 5, 8))),        # the observed year
    ("我两天前去了医院", (D(2023, 11, 14), D(2023, 11, 14))),
    ("上周五我很开心", (D(2023, 11, 10), D(2023, 11, 10))),
    ("昨天我帮同学写作业", (D(2023, 11, 15), D(2023, 11, 15))),
    ("去年我们去了北京", (D(2022, 1, 1), D(2022, 12, 31))),
])
def test_a_memorys_relative_dates_resolve_against_the_day_it_was_observed(text, span):
    assert dates.event_spans(text, OBSERVED) == (span,)


def test_a_memory_without_a_date_expression_has_no_event_span():
    assert dates.event_spans("Pottery is so relaxing and creative.", OBSERVED) == ()


@pytest.mark.parametrize("question, expected", [
    ("When did Caroline go to the support group?", True),
    ("What year did John start surfing?", True),
    ("你什么时候去的北京？", True),
    ("What did Caroline paint?", False),
    ("How does the deploy pipeline work?", False),
])
def test_when_questions(question, expected):
    assert dates.asks_when(question) is expected


def test_observed_day_reads_the_date_of_created():
    assert dates.observed_day("2023-05-08T13:56:00+00:00") == D(2023, 5, 8)
    assert dates.observed_day(None) is None
    assert dates.observed_day("not a date") is None
