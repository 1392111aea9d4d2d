"""Dates in questions and memories: what period a question asks about, when a memory's events happened.

A memory is written on the day it was observed (its ``created`` date: the session of a
conversation, the day a note was taken), and its text often places what it tells relative to
that day: "I went to a support group *yesterday*", "*last Friday* I won the final", "我*两天前*
去了医院". :func:`event_spans` resolves such expressions (English and Chinese, plus absolute
dates written in the text) against the observed date, so a memory can be found by the date its
event happened, not only the date it was written down.

A question names a period with absolute dates ("on 13 October, 2023", "in August 2023", "the
week before 16 November 2023", "2023年5月"): :func:`asked_span`. Its own relative words ("last
week") have no day to resolve against and are left alone. :func:`asks_when` tells a question
that asks for a date ("When did …?", "什么时候…").

Plain functions over ``datetime.date``, no I/O; spans are inclusive ``(first, last)`` days.
"""
from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date, timedelta
from functools import cache, lru_cache

Span = tuple[date, date]

_MONTHS = {name: i for i, names in enumerate((
    (), ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
    ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
    ("october", "oct"), ("november", "nov"), ("december", "dec"))) for name in names}
_WEEKDAYS = {name: i for i, names in enumerate((
    ("monday", "mon"), ("tuesday", "tue", "tues"), ("wednesday", "wed"), ("thursday", "thu", "thur", "thurs"),
    ("friday", "fri"), ("saturday", "sat"), ("sunday", "sun"))) for name in names}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "couple of": 2, "a few": 3, "few": 3,
            "several": 4}
_ZH_NUMBERS = {"一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9,
               "十": 10, "几": 3}
_ZH_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}

_MONTH = r"(january|february|march|april|may|june|july|august|september|october|november|december|" \
         r"jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
_NUMBER = r"(\d+|a couple of|couple of|a few|few|several|an|a|one|two|three|four|five|six|seven|eight|nine|ten)"
_WEEKDAY = r"(monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tues|tue|wed|thurs|thur|thu|fri|sat|sun)"

# absolute dates, most specific first (each match is consumed, so "May 2023" inside
# "8 May 2023" is not read twice)
_ABSOLUTE_RX = (
    ("ymd", r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b"),
    ("dmy", rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b"),
    ("mdy", rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b"),
    ("zh_ymd", r"(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]"),
    ("my", rf"\b{_MONTH},?\s+(?:of\s+)?{_YEAR}\b"),
    ("zh_ym", r"(\d{4})\s*年\s*(\d{1,2})\s*月"),
    ("dm", rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}\b"),
    ("md", rf"\b{_MONTH}\s+{_DAY}\b"),
    ("zh_md", r"(?<!\d)(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]"),
    ("y", rf"\b(?:in|of|during|since|by|until|year)\s+{_YEAR}\b|\b{_YEAR}\s*年"),
)
# "the week before 16 November 2023": a span before (or after) a date the question names
_BEFORE_RE = re.compile(
    rf"\b(?:(?:the\s+)?(week|weekend|day|month)|{_NUMBER}\s+(days?|weeks?|months?))\s+(before|after|prior to)\s*$",
    re.IGNORECASE)

_RELATIVE_RX = (
    ("days", r"\b(?:the\s+)?day before yesterday\b"),
    ("today", r"\b(?:today|tonight|this (?:morning|afternoon|evening)|earlier today|just now)\b"
              r"|今天|今晚|今早|今日|刚才"),
    ("yesterday", r"\b(?:yesterday|last night)\b|昨天|昨晚|昨日"),
    ("before_yesterday", r"前天"),
    ("tomorrow", r"\btomorrow\b|明天|明日"),
    ("ago", rf"\b{_NUMBER}\s+(days?|weeks?|months?|years?)\s+ago\b"),
    ("zh_ago", r"([一两二三四五六七八九十几\d]+)\s*(天|周|个星期|星期|个礼拜|个月|年)(?:之)?前"),
    ("weekday", rf"\b(?:last|this past)\s+{_WEEKDAY}\b"),
    ("zh_weekday", r"上(?:周|星期|个星期|礼拜)([一二三四五六日天])"),
    ("weekend", r"\b(?:last|this past|over the|past)\s+weekend\b|上(?:个)?周末"),
    ("last_week", r"\b(?:last|this past|the past|past) week\b|\ba week ago\b|上(?:周|星期|个星期|礼拜|个礼拜)"),
    ("this_week", r"\bthis week\b|这周|本周|这个星期"),
    ("last_month", r"\blast month\b|\ba month ago\b|上个月|上月"),
    ("this_month", r"\bthis month\b|这个月|本月"),
    ("last_year", r"\blast year\b|\ba year ago\b|去年"),
    ("year_before", r"前年"),
    ("next_week", r"\bnext week\b|下周|下个星期|下星期"),
    ("next_month", r"\bnext month\b|下个月"),
)

# Every absolute date holds a digit or a month's name: a question with neither (most of them)
# is answered without compiling the date patterns (~9 ms of a one-off CLI search).
_DATEISH_RE = re.compile(rf"\d|{_MONTH}", re.IGNORECASE)


@cache
def _patterns() -> tuple[list[tuple[str, re.Pattern]], list[tuple[str, re.Pattern]], re.Pattern]:
    """The absolute and relative date patterns, compiled on first use, and one pass that tells
    a text holding no date expression at all (most memories) from the rest."""
    absolute = [(kind, re.compile(rx, re.IGNORECASE)) for kind, rx in _ABSOLUTE_RX]
    relative = [(kind, re.compile(rx, re.IGNORECASE)) for kind, rx in _RELATIVE_RX]
    any_re = re.compile("|".join(f"(?:{rx})" for _, rx in (*_ABSOLUTE_RX, *_RELATIVE_RX)), re.IGNORECASE)
    return absolute, relative, any_re

_WHEN_RE = re.compile(
    r"^\s*when\b|\b(?:what|which)\s+(?:date|day|month|year|time|week|weekend)\b|\bhow long ago\b"
    r"|什么时候|哪天|哪一天|几月|哪个月|何时|哪年|哪一年|几号", re.IGNORECASE)


@dataclass(frozen=True)
class Asked:
    """The period a question asks about: a span, or a month of any year ("in June")."""
    span: Span | None = None
    month: int | None = None

    def covers(self, spans: tuple[Span, ...]) -> bool:
        """Whether any of ``spans`` falls (even partly) within the asked period."""
        if self.span is not None:
            first, last = self.span
            return any(a <= last and b >= first for a, b in spans)
        return any(_has_month(a, b, self.month) for a, b in spans)


def asks_when(question: str) -> bool:
    """True for a question that asks for a date or time ("When did …?", "什么时候")."""
    return bool(_WHEN_RE.search(question))


@lru_cache(maxsize=4096)
def asked_span(question: str) -> Asked | None:
    """The period the question names with absolute dates, or None.

    "in August 2023" is that month, "on 13 October, 2023" that day, "in 2022" that year, "in
    June" June of any year; "the week before 16 November 2023" the seven days before it.
    Several dates: the span that covers them all.
    """
    if _DATEISH_RE.search(question) is None:
        return None
    spans, months = [], []
    text = question
    for kind, rx in _patterns()[0]:
        for m in rx.finditer(text):
            span = _absolute(kind, m.groups(), None)
            if span is not None:
                spans.append(_shifted(span, question[:m.start()]))
        text = rx.sub(lambda m: " " * len(m.group(0)), text)
    if not spans:
        months = [_MONTHS[m.group(1).lower()] for m in re.finditer(rf"\b(?:in|during|of)\s+{_MONTH}\b", question,
                                                                   re.IGNORECASE)]
        return Asked(month=months[0]) if len(set(months)) == 1 else None
    return Asked(span=(min(a for a, _ in spans), max(b for _, b in spans)))


def event_spans(text: str, observed: date) -> tuple[Span, ...]:
    """The days a memory's text places its events on, resolved against the day it was observed
    (absolute dates without a year take the observed year). Empty when the text names none."""
    return _event_spans(text, observed)


@lru_cache(maxsize=65536)
def _event_spans(text: str, observed: date) -> tuple[Span, ...]:
    absolute, relative, any_re = _patterns()
    if any_re.search(text) is None:
        return ()
    out: list[Span] = []
    rest = text
    for kind, rx in absolute:
        for m in rx.finditer(rest):
            span = _absolute(kind, m.groups(), observed.year)
            if span is not None:
                out.append(span)
        rest = rx.sub(lambda m: " " * len(m.group(0)), rest)
    for kind, rx in relative:
        for m in rx.finditer(rest):
            span = _relative(kind, m.groups(), observed)
            if span is not None:
                out.append(span)
        rest = rx.sub(lambda m: " " * len(m.group(0)), rest)
    return tuple(dict.fromkeys(out))


def observed_day(created: str | None) -> date | None:
    """The calendar day of an ISO-8601 ``created`` value (its first ten characters), or None."""
    try:
        return date.fromisoformat(str(created or "")[:10])
    except ValueError:
        return None


# ------------------------------------------------------------------------------------------

def _absolute(kind: str, groups: tuple, default_year: int | None) -> Span | None:
    """The span of one absolute date match (None: not a real date, or no year to take)."""
    g = [x for x in groups if x is not None]
    try:
        if kind in ("ymd", "zh_ymd"):
            day = date(int(g[0]), int(g[1]), int(g[2]))
            return day, day
        if kind == "dmy":
            day = date(int(g[2]), _MONTHS[g[1].lower()], int(g[0]))
            return day, day
        if kind == "mdy":
            day = date(int(g[2]), _MONTHS[g[0].lower()], int(g[1]))
            return day, day
        if kind in ("my", "zh_ym"):
            year, month = (int(g[1]), _MONTHS[g[0].lower()]) if kind == "my" else (int(g[0]), int(g[1]))
            return _month_span(year, month)
        if kind == "y":
            year = int(g[0])
            return date(year, 1, 1), date(year, 12, 31)
        if default_year is None:
            return None
        if kind == "dm":
            day = date(default_year, _MONTHS[g[1].lower()], int(g[0]))
        elif kind == "md":
            day = date(default_year, _MONTHS[g[0].lower()], int(g[1]))
        else:  # zh_md
            day = date(default_year, int(g[0]), int(g[1]))
        return day, day
    except (ValueError, KeyError, IndexError):
        return None


def _shifted(span: Span, before: str) -> Span:
    """``span`` moved by what precedes it in the question: "the week before X" is the seven days before X."""
    m = _BEFORE_RE.search(before)
    if m is None:
        return span
    unit, count, units, direction = m.group(1), m.group(2), m.group(3), m.group(4).lower()
    n = _count(count) if count else 1
    unit = (unit or units or "day").lower().rstrip("s")
    days = {"day": n, "week": 7 * n, "weekend": 7, "month": 31 * n}[unit]
    first, last = span
    if direction == "after":
        return last + timedelta(days=1), last + timedelta(days=days)
    return first - timedelta(days=days), first - timedelta(days=1)


def _relative(kind: str, groups: tuple, d: date) -> Span | None:
    """The span one relative expression names, seen from day ``d``."""
    if kind == "today":
        return d, d
    if kind == "yesterday":
        return _days(d, -1)
    if kind in ("before_yesterday", "days"):
        return _days(d, -2)
    if kind == "tomorrow":
        return _days(d, 1)
    if kind in ("ago", "zh_ago"):
        n = _count(groups[0]) if kind == "ago" else _zh_count(groups[0])
        unit = groups[1].lower()
        if unit.startswith("day") or unit == "天":
            return _days(d, -n)
        if unit.startswith("week") or "星期" in unit or "周" in unit or "礼拜" in unit:
            return d - timedelta(days=7 * n + 3), d - timedelta(days=7 * n - 3)
        if unit.startswith("month") or "月" in unit:
            return _month_span(*_add_months(d.year, d.month, -n))
        return date(d.year - n, 1, 1), date(d.year - n, 12, 31)
    if kind in ("weekday", "zh_weekday"):
        target = _WEEKDAYS[groups[0].lower()] if kind == "weekday" else _ZH_WEEKDAYS[groups[0]]
        back = (d.weekday() - target) % 7 or 7
        if kind == "zh_weekday":   # 上周五: Friday of the previous calendar week
            monday = d - timedelta(days=d.weekday() + 7)
            day = monday + timedelta(days=target)
            return day, day
        return _days(d, -back)
    if kind == "weekend":
        back = (d.weekday() - 5) % 7 or 7
        saturday = d - timedelta(days=back)
        return saturday, saturday + timedelta(days=1)
    if kind == "last_week":
        monday = d - timedelta(days=d.weekday() + 7)
        return monday, monday + timedelta(days=6)
    if kind == "this_week":
        return d - timedelta(days=d.weekday()), d
    if kind == "next_week":
        monday = d + timedelta(days=7 - d.weekday())
        return monday, monday + timedelta(days=6)
    if kind in ("last_month", "this_month", "next_month"):
        shift = {"last_month": -1, "this_month": 0, "next_month": 1}[kind]
        return _month_span(*_add_months(d.year, d.month, shift))
    if kind in ("last_year", "year_before"):
        year = d.year - (1 if kind == "last_year" else 2)
        return date(year, 1, 1), date(year, 12, 31)
    return None


def _days(d: date, n: int) -> Span:
    day = d + timedelta(days=n)
    return day, day


def _count(word: str) -> int:
    word = word.lower()
    return int(word) if word.isdigit() else _NUMBERS.get(word, 1)


def _zh_count(word: str) -> int:
    if word.isdigit():
        return int(word)
    if word.startswith("十"):
        return 10 + _ZH_NUMBERS.get(word[1:], 0)
    if word.endswith("十"):
        return 10 * _ZH_NUMBERS.get(word[:-1], 1)
    return _ZH_NUMBERS.get(word[:1], 1)


def _month_span(year: int, month: int) -> Span:
    return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])


def _add_months(year: int, month: int, n: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + n
    return index // 12, index % 12 + 1


def _has_month(first: date, last: date, month: int | None) -> bool:
    if month is None:
        return False
    if (last - first).days >= 365:
        return True
    day = first
    while day <= last:
        if day.month == month:
            return True
        day = (day.replace(day=1) + timedelta(days=32)).replace(day=1)
    return False
