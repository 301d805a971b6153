import pytest

from gateway.cache import CacheConfig, CacheRequest, SemanticCache, TenantCachePolicy

# `embedder` (the real MiniLM, once per session) lives in tests/gateway/conftest.py: the routing tests share it.


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def policy() -> TenantCachePolicy:
    return TenantCachePolicy()


@pytest.fixture
def make_cache(embedder, clock):
    def make(**kw) -> SemanticCache:
        return SemanticCache(embedder, kw.pop("config", CacheConfig()), clock=clock, **kw)
    return make


@pytest.fixture
def cache(make_cache) -> SemanticCache:
    return make_cache()


def ask(text: str, *, tenant: str = "t1", model: str = "chat", history: list[dict] | None = None,
        system: str | None = None, **kw) -> CacheRequest:
    messages = ([{"role": "system", "content": system}] if system else []) + (history or [])
    messages.append({"role": "user", "content": text})
    kw.setdefault("temperature", 0.0)
    return CacheRequest(tenant, model, messages, **kw)


class FixedScorer:
    """A stand-in for the pair judge's model: one probability for every pair, and the pairs it read."""

    def __init__(self, p: float) -> None:
        self.p, self.read = p, []

    def probabilities(self, pairs):
        self.read += pairs
        return [self.p] * len(pairs)
