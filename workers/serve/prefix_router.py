"""Prefix affinity: requests that share a prompt prefix go to the same replica, whose prefix
cache then already holds that prefix's KV blocks.

The caller passes `prefix_key` (a hash of, say, the system prompt) to `generate`. Replicas are
ranked by rendezvous hashing on that key, so the choice is stable and moves only the keys of a
replica that comes or goes. The preferred replica is tried first; if it refuses (its queue is
full) Serve falls through to the next rank, two other replicas, as power-of-two-choices would.
Requests without a key use plain power-of-two choices."""
from __future__ import annotations

import hashlib
import random

from ray.serve.request_router import PendingRequest, RequestRouter, RunningReplica


def prefix_key(prompt: str | None = None, messages: list[dict] | None = None, *, chars: int = 512) -> str | None:
    """What requests that can share cached KV have in common: the system message when there
    is one, else the head of the prompt (or of the first message). None: nothing worth keying."""
    if messages:
        system = next((m.get("content") for m in messages if m.get("role") == "system"), None)
        head = system if isinstance(system, str) and system else messages[0].get("content")
    else:
        head = prompt
    if not isinstance(head, str) or not head:
        return None
    return hashlib.blake2b(head[:chars].encode(), digest_size=8).hexdigest()


def _score(key: str, replica_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(f"{key}\x00{replica_id}".encode(), digest_size=8).digest(), "big")


def rank_by_affinity(key: str, replica_ids: list[str]) -> list[str]:
    """Replica ids, the one owning `key` first (highest rendezvous score)."""
    return sorted(replica_ids, key=lambda rid: _score(key, rid), reverse=True)


class PrefixAffinityRouter(RequestRouter):
    # No FIFOMixin: it hands a chosen replica to the oldest waiting request, not to the one
    # whose prefix chose it, which would undo the affinity. The base class matches exactly.
    async def choose_replicas(self, candidate_replicas: list[RunningReplica],
                              pending_request: PendingRequest | None = None) -> list[list[RunningReplica]]:
        if not candidate_replicas:
            return []
        key = pending_request.kwargs.get("prefix_key") if pending_request is not None else None
        if not key or len(candidate_replicas) == 1:
            return [random.sample(candidate_replicas, min(2, len(candidate_replicas)))]
        by_id = {r.replica_id.unique_id: r for r in candidate_replicas}
        ranked = [by_id[rid] for rid in rank_by_affinity(key, list(by_id))]
        rest = ranked[1:]
        return [[ranked[0]], random.sample(rest, min(2, len(rest)))]
