"""Priors: what a question says about the memories it wants beyond the words they share.

Three cues, each a multiplier on a candidate's ranking score (the knobs are
:class:`~memrepo.retrieval.ranking.Tuning`'s ``*_prior`` fields; 0 turns a cue off):

* **facet** — a question that names a facet's value ("What did *Caroline* paint?") prefers the
  memories carrying that facet (the tag ``speaker-caroline``): a facet tag is ``key-value``
  without ``#``, and its value must be a word (``session-3`` is no name);
* **date** — a question that names a period ("in August 2023", "the week before 16 November
  2023") prefers the memories whose observed day, or an event their text dates against it
  ("last Friday", "两天前"), falls in that period (:mod:`memrepo.retrieval.dates`);
* **when** — a question that asks for a date ("When did …", "什么时候") prefers memories whose
  text places their event in time: the answer is a date only such a memory holds.

A memory's share of the query's words still decides whether it is relevant at all (the
relevance floor): a prior only re-orders what the words and vectors found.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from memrepo import text
from memrepo.retrieval import dates

_FACET_RE = re.compile(r"^([^\W\d_][\w]*)[-:](.*[^\W\d_].*)$")


@dataclass(frozen=True)
class Cues:
    """What a question tells about its memories besides its words."""
    terms: frozenset[str]            # the question's analysed terms (facet values are matched to them)
    asked: dates.Asked | None        # the period the question names
    when: bool                       # the question asks for a date

    @property
    def quiet(self) -> bool:
        return not self.terms and self.asked is None and not self.when


def cues(question: str, terms: Iterable[str]) -> Cues:
    """The cues of one question (``terms``: its analysed terms, as the ranking counts them)."""
    return Cues(frozenset(terms), dates.asked_span(question), dates.asks_when(question))


def factor(fields: dict, cues: Cues, *, facet: float, date: float, when: float) -> float:
    """The multiplier of one candidate (its stored fields: tags, body, created) under the
    priors ``facet``, ``date`` and ``when`` (each 0: off)."""
    out = 1.0
    if facet and cues.terms and _names_facet(fields, cues.terms):
        out *= 1.0 + facet
    if (date and cues.asked is not None) or (when and cues.when):
        observed = dates.observed_day(fields.get("created"))
        events = dates.event_spans(_text(fields), observed) if observed else ()
        if date and cues.asked is not None and observed is not None \
                and cues.asked.covers(((observed, observed), *events)):
            out *= 1.0 + date
        if when and cues.when and events:
            out *= 1.0 + when
    return out


def _names_facet(fields: dict, terms: frozenset[str]) -> bool:
    tags = (fields.get("meta") or {}).get("tags", ())
    return any(values and values <= terms for values in map(facet_terms, tags))


@lru_cache(maxsize=65536)
def facet_terms(tag: str) -> frozenset[str]:
    """The analysed terms of a facet tag's value (``speaker-caroline`` → {carolin}); empty for a
    business tag (``#…``), a tag without a value, or a value without a letter."""
    if tag.startswith("#"):
        return frozenset()
    m = _FACET_RE.match(tag)
    return frozenset(text.terms(m.group(2).replace("-", " ").replace("_", " "))) if m else frozenset()


def _text(fields: dict) -> str:
    return fields.get("body") or fields.get("summary") or ""
