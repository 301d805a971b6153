"""Serving one stored answer to requests with other `max_tokens`: greedy decoding makes the answer under a
limit of M tokens the first M tokens of the answer under any larger limit.

So an answer that ended by "stop" after C tokens serves every request allowing >= C tokens as is, and
a request allowing M < C tokens with its first M tokens, finish_reason "length". An answer cut at its own
limit L ("length", C == L) serves requests allowing M <= L, cut the same way; it knows nothing past L, so
a larger limit (or none) misses. Cutting needs where each token's text ends (`token_ends`); without them
an entry serves only the limits that need no cut.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

from gateway.cache.types import CachedAnswer


def fit(answer: CachedAnswer, max_tokens: int | None) -> CachedAnswer | None:
    """The answer a request allowing `max_tokens` (None: no limit) gets from this entry, or None: it cannot tell."""
    whole = answer.completion_tokens
    if answer.finish_reason == "stop":
        if max_tokens is None or max_tokens >= whole:
            return answer
    elif answer.finish_reason == "length":
        if max_tokens is None or answer.max_tokens is None or max_tokens > answer.max_tokens:
            return None
        if max_tokens == whole:
            return answer
    else:
        return None
    return cut(answer, max_tokens)


def cut(answer: CachedAnswer, tokens: int) -> CachedAnswer | None:
    """The first `tokens` tokens of the answer, finish_reason "length"; None when its token ends are unknown."""
    if tokens < 1 or len(answer.token_ends) != answer.completion_tokens or tokens > answer.completion_tokens:
        return None
    return dataclasses.replace(answer, text=answer.text[:answer.token_ends[tokens - 1]], completion_tokens=tokens,
                               finish_reason="length", max_tokens=tokens, token_ends=answer.token_ends[:tokens])


def token_ends(detokenize: Callable[[list[int]], str], token_ids: list[int], text: str) -> tuple[int, ...]:
    """Where each token's text ends in `text` (character offsets), from the decoded prefixes; () when the
    ids do not spell the text (a stop string removed from it, say). A token that ends inside a multi-byte
    character ends where the previous one did: a cut never splits a character."""
    ends: list[int] = []
    end = 0
    for i in range(1, len(token_ids) + 1):
        prefix = detokenize(token_ids[:i])
        if text.startswith(prefix):
            end = len(prefix)
        elif not prefix.endswith("\ufffd"):
            return ()
        ends.append(end)
    return tuple(ends) if end == len(text) else ()
