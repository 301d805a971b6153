"""Token logprobs in OpenAI's two shapes: chat's per-token objects and the legacy completions' parallel lists."""
from __future__ import annotations

from collections.abc import Callable

from gateway.schemas.openai import ChatLogprobs, ChatTokenLogprob, CompletionLogprobs, TopLogprob
from gateway.serving.base import TokenLogprob

Texts = Callable[[list[int]], list[str]]  # token ids -> each token's own text


def _texts(logprobs: list[TokenLogprob], texts: Texts) -> dict[int, str]:
    ids = {lp.token_id for lp in logprobs} | {t for lp in logprobs for t, _ in lp.top}
    ordered = sorted(ids)
    return dict(zip(ordered, texts(ordered)))


def chat_logprobs(logprobs: list[TokenLogprob] | None, texts: Texts) -> ChatLogprobs | None:
    if logprobs is None:
        return None
    text = _texts(logprobs, texts)

    def top(token_id: int, value: float) -> TopLogprob:
        return TopLogprob(token=text[token_id], logprob=value, bytes=list(text[token_id].encode()))

    return ChatLogprobs(content=[
        ChatTokenLogprob(token=text[lp.token_id], logprob=lp.logprob, bytes=list(text[lp.token_id].encode()),
                         top_logprobs=[top(t, v) for t, v in lp.top]) for lp in logprobs])


def completion_logprobs(logprobs: list[TokenLogprob] | None, texts: Texts, offset: int = 0,
                        with_top: bool = True) -> CompletionLogprobs | None:
    """`offset`: where this run of tokens starts in the completion's text (text_offset counts from there)."""
    if logprobs is None:
        return None
    text = _texts(logprobs, texts)
    offsets, at = [], offset
    for lp in logprobs:
        offsets.append(at)
        at += len(text[lp.token_id])
    return CompletionLogprobs(
        tokens=[text[lp.token_id] for lp in logprobs], token_logprobs=[lp.logprob for lp in logprobs],
        top_logprobs=[{text[t]: v for t, v in lp.top} for lp in logprobs] if with_top else None,
        text_offset=offsets)
