"""Influence decay: activity propagation, keystone protection, archive and expiry plans."""
from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memrepo.lifecycle.decay import DecayParams, compute_activity, own_activity, plan_archive, plan_expiry
from memrepo.lifecycle.graph import Node, build_graph

NOW = datetime(2026, 11, 29, 3, 0, tzinfo=UTC)
OLD = "2026-01-10T09:00:00+08:00"  # long past the grace period
HOT = (12, "2026-11-28T20:00:00+08:00")


def node(id_: str, **kw) -> Node:
    kw.setdefault("created", OLD)
    return Node(id_, **kw)


def plan_for(nodes, recall=None, cooccurrence=(), params=DecayParams()):
    graph = build_graph(nodes, cooccurrence)
    acts = compute_activity(graph, recall=recall or {}, now=NOW, params=params)
    return acts, plan_archive(acts, graph, now=NOW, params=params)


def decision(plan, id_):
    return next(d for d in plan.decisions if d.id == id_)


def test_own_activity_saturates_and_decays_slowly():
    assert own_activity(0, None, now=NOW) == 0.0
    fresh = own_activity(10, "2026-11-29T03:00:00+00:00", now=NOW)
    assert fresh == pytest.approx(1.0)
    quarter = own_activity(10, "2026-08-31T03:00:00+00:00", now=NOW)
    assert quarter == pytest.approx(0.5, abs=0.01)  # 90-day half-life
    assert own_activity(2, "garbage", now=NOW) == 0.0


def test_activity_propagates_from_a_hot_memory_to_what_it_links_to():
    nodes = [node("hot", links=("principle",)), node("principle"), node("bystander")]
    acts, plan = plan_for(nodes, recall={"hot": HOT})
    assert acts["principle"].linked > 0 and acts["bystander"].linked == 0
    assert acts["principle"].score > acts["bystander"].score
    assert acts["hot"].linked == 0  # lending flows along links, not back
    assert decision(plan, "principle").action == "keep"
    assert decision(plan, "bystander").action == "archive"


def test_propagation_reaches_two_hops_and_converges():
    nodes = [node("a", links=("b",)), node("b", body="relies on [[c]]"), node("c")]
    acts, _ = plan_for(nodes, recall={"a": HOT})
    assert acts["a"].score > acts["b"].score > acts["c"].score > 0


def test_inactive_memories_lend_nothing():
    nodes = [node("old", status="superseded", links=("x",)), node("x")]
    acts, plan = plan_for(nodes, recall={"old": HOT})
    assert acts["x"].linked == 0
    assert plan.untouched == ("old",)


def test_keystone_by_base_weight_is_kept_with_zero_recalls():
    acts, plan = plan_for([node("arch", weight=0.9), node("noise")])
    assert acts["arch"].own == 0
    assert decision(plan, "arch").action == "keep"
    assert "keystone" in decision(plan, "arch").reason


def test_keystone_by_active_linkers_is_kept_with_zero_recalls():
    nodes = [node("principle")] + [node(f"m{i}", links=("principle",)) for i in range(3)]
    acts, plan = plan_for(nodes)  # nobody recalled anything
    d = decision(plan, "principle")
    assert d.action == "keep" and "linked from 3 active" in d.reason
    assert decision(plan, "m0").action == "archive"  # the linkers themselves are cold


def test_linkers_that_are_not_active_do_not_make_a_keystone():
    nodes = [node("p")] + [node(f"m{i}", links=("p",), status="archived") for i in range(3)]
    _, plan = plan_for(nodes)
    assert decision(plan, "p").action == "archive"


def test_cold_isolated_unweighted_is_a_deletion_candidate():
    nodes = [node("lonely"), node("linked", links=("other",)), node("other")]
    _, plan = plan_for(nodes)
    assert plan.deletion_candidates == ("lonely",)
    assert decision(plan, "linked").action == "archive"
    assert not decision(plan, "linked").delete_candidate  # it has an edge: archive only


def test_cooccurrence_saves_from_deletion_but_not_from_archive():
    _, plan = plan_for([node("a"), node("b")], cooccurrence=[("a", "b", 4)])
    assert plan.archived == ("a", "b") and plan.deletion_candidates == ()


def test_recently_recalled_and_new_and_l4_are_kept():
    nodes = [node("used"), node("fresh", created="2026-11-20T10:00:00+08:00"),
             node("identity", layer="L4")]
    _, plan = plan_for(nodes, recall={"used": (2, "2026-11-01T10:00:00+00:00")})
    assert [d.action for d in plan.decisions] == ["keep", "keep", "keep"]
    assert "new" in decision(plan, "fresh").reason


def test_hub_lending_is_spread():
    hub = node("hub", links=tuple(f"t{i}" for i in range(50)))
    single = node("single", links=("solo",))
    acts, _ = plan_for([hub, single, node("solo")] + [node(f"t{i}") for i in range(50)],
                       recall={"hub": HOT, "single": HOT})
    assert acts["t0"].linked < acts["solo"].linked


def test_plan_expiry_demotes_or_archives():
    memories = [Node("l2", layer="L2", expires="2026-11-01T00:00:00+00:00"),
                Node("l1", layer="L1", expires="2026-10-01T00:00:00+00:00"),
                Node("future", layer="L3", expires="2027-01-01T00:00:00+00:00"),
                Node("gone", layer="L2", status="archived", expires="2026-01-01T00:00:00+00:00"),
                Node("bad", layer="L2", expires="soon")]
    demote = plan_expiry(memories, now=NOW)
    assert [(a.id, a.action, a.to_layer) for a in demote.actions] == [
        ("l1", "archive", None), ("l2", "demote", "L1")]
    assert demote.skipped[0][0] == "bad"
    archive = plan_expiry(memories, now=NOW, policy="archive")
    assert {a.action for a in archive.actions} == {"archive"}
    with pytest.raises(ValueError):
        plan_expiry(memories, now=NOW, policy="delete")
