from __future__ import annotations

import asyncio
from collections import Counter
from types import SimpleNamespace

from workers.serve.prefix_router import PrefixAffinityRouter, prefix_key, rank_by_affinity


def test_prefix_key_uses_the_system_prompt():
    sys = {"role": "system", "content": "You are terse."}
    a = prefix_key(messages=[sys, {"role": "user", "content": "hi"}])
    b = prefix_key(messages=[sys, {"role": "user", "content": "something else"}])
    assert a == b and a != prefix_key(messages=[{"role": "user", "content": "hi"}])
    assert prefix_key(prompt="x" * 600) == prefix_key(prompt="x" * 512 + "y")
    assert prefix_key() is None and prefix_key(prompt="") is None


def test_rendezvous_ranking_is_stable_and_spreads_keys():
    ids = ["r1", "r2", "r3", "r4"]
    owners = Counter(rank_by_affinity(f"key-{i}", ids)[0] for i in range(400))
    assert set(owners) == set(ids) and min(owners.values()) > 50
    # Removing a replica moves only the keys it owned.
    for i in range(100):
        before = rank_by_affinity(f"key-{i}", ids)[0]
        if before != "r4":
            assert rank_by_affinity(f"key-{i}", ids[:3])[0] == before


def _replica(rid: str):
    return SimpleNamespace(replica_id=SimpleNamespace(unique_id=rid))


def _choose(router, replicas, kwargs):
    pending = SimpleNamespace(kwargs=kwargs)
    return asyncio.run(PrefixAffinityRouter.choose_replicas(router, replicas, pending))


def test_router_prefers_the_owner_then_falls_back():
    replicas = [_replica(r) for r in ("r1", "r2", "r3")]
    router = object.__new__(PrefixAffinityRouter)  # choose_replicas reads no router state
    ranks = _choose(router, replicas, {"prefix_key": "abc"})
    owner = rank_by_affinity("abc", ["r1", "r2", "r3"])[0]
    assert [r.replica_id.unique_id for r in ranks[0]] == [owner]
    assert owner not in {r.replica_id.unique_id for r in ranks[1]} and len(ranks[1]) == 2
    plain = _choose(router, replicas, {"prefix_key": None})
    assert len(plain) == 1 and len(plain[0]) == 2
