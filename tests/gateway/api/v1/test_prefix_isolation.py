"""The engine's prefix cache never tells one tenant what another sent (issue 16, item 1)."""
from __future__ import annotations

import pytest
from openai import OpenAI

from tests.gateway.support import make_tenant

pytestmark = pytest.mark.model

# Long enough for several full KV blocks; the wording is this test's own.
LONG = ("Internal memo, do not share. The quarterly figures for the northern warehouse show that "
        "pallet throughput rose while damaged-goods returns fell, and the night shift asked for two more "
        "forklifts, a new charging station and a rota that leaves Sundays free. Legal wants the supplier "
        "contract renewed before March, finance wants it renegotiated first, and the board has not "
        "decided which of the two it prefers. Summarise the memo in one line.")


def _client(real_gateway) -> OpenAI:
    server, settings = real_gateway
    _, key = make_tenant(settings.resolved_database_url, cache_enabled=False)  # the engine must answer
    return OpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0)


def _cached(client: OpenAI) -> tuple[int, int]:
    r = client.chat.completions.create(model="smollm2-135m-instruct", messages=[{"role": "user", "content": LONG}],
                                       max_tokens=1, temperature=0)
    return r.usage.prompt_tokens_details.cached_tokens, r.usage.prompt_tokens


def test_another_tenant_gets_no_cached_tokens_and_the_same_tenant_does(real_gateway):
    a, b = _client(real_gateway), _client(real_gateway)
    first, prompt_tokens = _cached(a)
    assert prompt_tokens > 100
    assert first == 0
    assert _cached(b) == (0, prompt_tokens)  # tenant B learns nothing of A's prompt
    again, _ = _cached(a)
    assert again >= prompt_tokens - 16  # A's own repeat reuses all but its last block
    assert _cached(b)[0] >= prompt_tokens - 16  # and B, having sent it itself, now reuses its own
