"""Gateway helpers; the session fixtures (gw_catalogue, real_gateway: one real app, SmolLM2 fp32 in process,
loaded once per session) live in tests/conftest.py, so tests/conformance shares the same one."""
from __future__ import annotations

import os

import pytest

from gateway.settings import Settings
from tests.gateway.support import ADMIN_KEY, METRICS_TOKEN

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def gateway_settings(tmp, db_url: str, **extra) -> Settings:
    extra.setdefault("metrics_token", METRICS_TOKEN)
    # The live cache check samples hits at random: off unless a test asks, so engine call counts stay exact.
    extra.setdefault("cache_audit_fraction", 0.0)
    # Warming the verifier (about 15 s of one core per app) stays off: the first lookups embed as needed.
    extra.setdefault("cache_warm_verifier", False)
    return Settings(DATABASE_URL=db_url, REDIS_URL=extra.pop("redis_url", ""), data_dir=tmp,
                    admin_key=ADMIN_KEY, backend="inprocess", log_level="WARNING", **extra)


@pytest.fixture(scope="session")
def embedder():
    """The real MiniLM sentence embedder, loaded once per session (the cache and routing tests share it)."""
    from gateway.embedding import Embedder, EmbedderConfig

    return Embedder(EmbedderConfig())
