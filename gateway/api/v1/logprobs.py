"""Token logprobs in OpenAI's two shapes: chat's per-token objects and the legacy completions' parallel lists."""
from __future__ import annotations

from collections.abc import Callable

from gateway.schemas.openai import ChatLogprobs, ChatTokenLogprob, CompletionLogprobs, TopLogprob
from gateway.serving.base import TokenLogprob

Texts = Callable[[list[int]], list[str]]  # token ids -> each token's own text


def _texts(logprobs: list[TokenLogprob], texts: Texts) -> dict[int, str]:
    """Each engine token id's text, decoded in one call (an upstream's tokens come as text already)."""
    ids = {lp.token_id for lp in logprobs if lp.token is None} | {t for lp in logprobs for t, _ in lp.top}
    ordered = sorted(ids)
    return dict(zip(ordered, texts(ordered))) if ordered else {}


def _token(lp: TokenLogprob, text: dict[int, str]) -> str:
    return lp.token if lp.token is not None else text[lp.token_id]


def _top(lp: TokenLogprob, text: dict[int, str]) -> list[tuple[str, float]]:
    return list(lp.top_tokens) if lp.token is not None else [(text[t], v) for t, v in lp.top]


def chat_logprobs(logprobs: list[TokenLogprob] | None, texts: Texts) -> ChatLogprobs | None:
    if logprobs is None:
        return None
    text = _texts(logprobs, texts)

    def top(token: str, value: float) -> TopLogprob:
        return TopLogprob(token=token, logprob=value, bytes=list(token.encode()))

    return ChatLogprobs(content=[
        ChatTokenLogprob(token=_token(lp, text), logprob=lp.logprob, bytes=list(_token(lp, text).encode()),
                         top_logprobs=[top(t, v) for t, v in _top(lp, text)]) for lp in logprobs])


def completion_logprobs(logprobs: list[TokenLogprob] | None, texts: Texts, offset: int = 0,
                        with_top: bool = True) -> CompletionLogprobs | None:
    """`offset`: where this run of tokens starts in the completion's text (text_offset counts from there)."""
    if logprobs is None:
        return None
    text = _texts(logprobs, texts)
    offsets, at = [], offset
    for lp in logprobs:
        offsets.append(at)
        at += len(_token(lp, text))
    return CompletionLogprobs(
        tokens=[_token(lp, text) for lp in logprobs], token_logprobs=[lp.logprob for lp in logprobs],
        top_logprobs=[dict(_top(lp, text)) for lp in logprobs] if with_top else None,
        text_offset=offsets)
