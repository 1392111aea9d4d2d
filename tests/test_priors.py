"""Priors (memrepo.retrieval.priors) on a real index: a question that names a facet's value, a
period, or asks "when" re-orders memories that share its words; with the prior at 0 the order
is the words' own (so each test also shows the prior is what moved it)."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from memrepo.retrieval.fields import IndexDoc
from memrepo.retrieval.index import MemoryIndex
from memrepo.retrieval.priors import facet_terms
from memrepo.retrieval.ranking import DEFAULT_TUNING, SearchQuery


def doc(id: str, body: str, *, tags=(), created="2023-11-16T10:00:00+00:00") -> IndexDoc:
    return IndexDoc(id=id, path=f"memories/L1/{id}.md", layer="L1", kind="event", subject="conv",
                    fact=None, status="active", summary=body[:80], body=body, tags=tuple(tags),
                    created=created, updated=None)


FILLER = [doc(f"f{i}", f"routine note {i} about lunch and the weather", tags=(f"speaker-{n}",))
          for i, n in enumerate(["ann", "bob"] * 6)]


def ranked(tmp_path: Path, docs, question: str, **tuning) -> list[str]:
    ix = MemoryIndex(tmp_path / f"ix-{len(tuning)}-{abs(hash(str(tuning)))}",
                     tuning=dataclasses.replace(DEFAULT_TUNING, **tuning))
    ix.rebuild(docs + FILLER, commit=None)
    return [h.id for h in ix.search(SearchQuery(question)).hits]


def test_a_question_naming_a_speaker_prefers_that_speakers_memories(tmp_path):
    docs = [doc("mel", "Melanie: Caroline, I paint too! I painted a sunset for Caroline", tags=("speaker-melanie",)),
            doc("car", "I painted a lake in the mountains", tags=("speaker-caroline",))]
    question = "What did Caroline paint?"
    assert ranked(tmp_path, docs, question, facet_prior=0.0)[0] == "mel"   # more of the words
    assert ranked(tmp_path, docs, question)[0] == "car"                    # the speaker named


def test_a_question_naming_a_period_prefers_memories_whose_events_fall_in_it(tmp_path):
    docs = [doc("june", "Tim: I visited a castle in Scotland, the castle was huge",
                created="2023-06-02T10:00:00+00:00"),
            doc("nov", "Tim: I went to a castle during my trip last Friday",
                created="2023-11-16T10:00:00+00:00")]
    question = "Which castle did Tim visit in November 2023?"
    assert ranked(tmp_path, docs, question, date_prior=0.0)[0] == "june"
    assert ranked(tmp_path, docs, question)[0] == "nov"


def test_a_when_question_prefers_memories_that_date_their_event(tmp_path):
    docs = [doc("plain", "Caroline: the support group is so powerful, the support group helps"),
            doc("dated", "Caroline: I went to a support group yesterday")]
    question = "When did Caroline go to the support group?"
    assert ranked(tmp_path, docs, question, when_prior=0.0)[0] == "plain"
    assert ranked(tmp_path, docs, question)[0] == "dated"


def test_the_priors_never_make_an_unrelated_memory_relevant(tmp_path):
    docs = [doc("car", "Caroline: I adopted a dog", tags=("speaker-caroline",))]
    assert ranked(tmp_path, docs, "What did Caroline paint in August 2023?") == ["car"]
    assert ranked(tmp_path, docs, "kubernetes upgrade in August 2023") == []


@pytest.mark.parametrize("tag, terms", [
    ("speaker-caroline", {"carolin"}), ("speaker-john-smith", {"john", "smith"}),
    ("session-3", set()), ("#speaker-caroline", set()), ("locomo", set()), ("image", set()),
])
def test_facet_values_are_words_of_key_value_tags(tag, terms):
    assert facet_terms(tag) == terms
