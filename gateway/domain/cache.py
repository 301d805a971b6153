"""A semantic-cache entry as stored and served: plain data that the cache (gateway/cache) and its SQL
store (gateway/crud/semantic_cache.py) share."""
from __future__ import annotations

from dataclasses import dataclass

# "stop" is a complete answer; "length" one cut at the request's max_tokens, which serves requests with an
# equal or smaller limit (gateway/cache/truncation.py). "tool_calls" acts, "error" and "abort" are not answers.
STORABLE_FINISH_REASONS = frozenset({"stop", "length"})


@dataclass(slots=True, frozen=True)
class CachedAnswer:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str = "stop"  # or "length": cut at `max_tokens` (truncation.py serves it)
    max_tokens: int | None = None  # the limit it was generated under (None: none)
    token_ends: tuple[int, ...] = ()  # character offset where each token's text ends; () unknown


@dataclass(slots=True)
class CacheEntry:
    """One stored answer. `question` is the last user message, the only text compared semantically."""

    id: str
    tenant_id: str
    model: str
    namespace: str
    exact_key: str
    question: str
    answer: CachedAnswer
    # np.ndarray [dim] float32 until indexed and persisted; then None (the FAISS index keeps the only copy).
    vector: object | None
    created_at: float
    expires_at: float | None  # None: never
    hits: int = 0
    context: str = ""  # the earlier user turns (keys.context), verified like the question

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and now >= self.expires_at
