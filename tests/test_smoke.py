from memrepo.review import writes as memories


def test_add_commits_low_risk_memory(vault):
    result = memories.add(vault, {"subject": "user", "kind": "preference", "summary": "Likes tea"}, "Tea, not coffee.")
    assert result.status == "active" and result.commit
    assert vault.get(result.id).meta["summary"] == "Likes tea"
