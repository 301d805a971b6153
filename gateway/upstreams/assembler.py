"""OpenAI chunk dicts (chat or text completions) -> the gateway's GenerationChunks.

Counts: the upstream's reported usage when it sends one (the usage chunk after the last choice finished), else
the gateway's own count with the version's tokenizer. The chunk that finishes the request (its top-level
finish_reason, which ends the pipeline's loop) waits for that usage chunk, so the final counts ride on it."""
from __future__ import annotations

from gateway.serving.base import CompletionDelta, GenerationChunk, TokenLogprob
from gateway.upstreams.tokens import TokenCounter

UPSTREAM, GATEWAY = "upstream", "gateway"  # the ledger's metered_by


def _tool_calls(raw) -> list[dict] | None:
    """Native tool-call deltas as sent, with an index on each (some servers leave it out: their place);
    an empty list (vLLM sends `tool_calls: []`) is no calls."""
    if not raw:
        return None
    return [{**c, "index": c.get("index", i)} for i, c in enumerate(raw) if isinstance(c, dict)] or None


def _number(value) -> float:
    return float(value) if isinstance(value, int | float) else -9999.0  # null (some servers): OpenAI's floor


def _logprobs(raw) -> list[TokenLogprob] | None:
    """A chunk's logprobs as the upstream sent them, in chat's shape ({"content": [{token, logprob,
    top_logprobs}]}) or legacy completions' parallel lists; None when there are none."""
    if not isinstance(raw, dict):
        return None
    if isinstance(raw.get("content"), list):
        return [TokenLogprob(-1, _number(e.get("logprob")), token=str(e.get("token", "")),
                             top_tokens=tuple((str(t.get("token", "")), _number(t.get("logprob")))
                                              for t in e.get("top_logprobs") or () if isinstance(t, dict)))
                for e in raw["content"] if isinstance(e, dict)] or None
    tokens = raw.get("tokens")
    if not isinstance(tokens, list):
        return None
    values = raw.get("token_logprobs") or []
    tops = raw.get("top_logprobs") or []
    return [TokenLogprob(-1, _number(values[i] if i < len(values) else None), token=str(token),
                         top_tokens=tuple((str(k), _number(v)) for k, v in
                                          (tops[i].items() if i < len(tops) and isinstance(tops[i], dict) else ())))
            for i, token in enumerate(tokens)] or None


class ChunkAssembler:
    def __init__(self, *, n: int, prompt_tokens: int, counter: TokenCounter) -> None:
        self.n, self.counter = n, counter
        self.prompt_tokens, self.completion_tokens, self.cached_tokens = prompt_tokens, 0, 0
        self.metered_by = GATEWAY
        self._finished: dict[int, str] = {}
        self._held: GenerationChunk | None = None  # the finishing chunk, until usage or the end

    @property
    def done(self) -> bool:
        return len(self._finished) >= self.n

    def feed(self, chunk: dict) -> list[GenerationChunk]:
        usage = chunk.get("usage")
        if isinstance(usage, dict) and usage.get("completion_tokens") is not None:
            self._reported(usage)
        deltas = [d for d in (self._delta(c) for c in chunk.get("choices") or ()) if d is not None]
        if not deltas:
            return []
        out = self._chunk(deltas)
        if self.done:  # every choice finished: hold it for the usage chunk
            self._held = out
            return []
        return [out]

    def end(self) -> GenerationChunk | None:
        """At the stream's end: the finishing chunk with the final counts, or None when the answer never finished
        (a cut stream)."""
        held, self._held = self._held, None
        if held is None:
            return None
        held.prompt_tokens, held.completion_tokens = self.prompt_tokens, self.completion_tokens
        held.cached_tokens, held.metered_by = self.cached_tokens, self.metered_by
        return held

    def _reported(self, usage: dict) -> None:
        self.metered_by = UPSTREAM
        self.prompt_tokens = int(usage.get("prompt_tokens") or 0)
        self.completion_tokens = int(usage.get("completion_tokens") or 0)
        details = usage.get("prompt_tokens_details") or {}
        self.cached_tokens = int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0

    def _delta(self, choice: dict) -> CompletionDelta | None:
        index = int(choice.get("index") or 0)
        delta = choice.get("delta") or {}
        text = delta.get("content") if "delta" in choice else choice.get("text")
        text = text or ""
        calls = _tool_calls(delta.get("tool_calls"))
        finish = choice.get("finish_reason")
        logprobs = _logprobs(choice.get("logprobs"))
        if not text and not calls and not finish and not logprobs:
            return None  # a role chunk, or an empty keep-alive delta
        if self.metered_by == GATEWAY:
            pieces = text + "".join(str((c.get("function") or {}).get("arguments") or "") for c in calls or ())
            self.completion_tokens += max(1, self.counter.count_text(pieces)) if pieces else 0
        if finish:
            self._finished[index] = finish
        return CompletionDelta(index, text, [], finish, logprobs=logprobs, tool_calls=calls)

    def _chunk(self, deltas: list[CompletionDelta]) -> GenerationChunk:
        first = next((d for d in deltas if d.index == 0), None)
        return GenerationChunk(
            text=first.text if first else "", token_ids=[], prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens, cached_tokens=self.cached_tokens,
            finish_reason=self._finished.get(0) if self.done else None, completions=deltas,
            metered_by=self.metered_by)
