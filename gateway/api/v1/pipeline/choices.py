"""The n completions of one request as their deltas arrive: text, tokens, logprobs, finish reasons."""
from __future__ import annotations

from dataclasses import dataclass, field

from gateway.serving.base import CompletionDelta, GenerationChunk, TokenLogprob


def deltas_of(chunk: GenerationChunk) -> list[CompletionDelta]:
    """A chunk's per-completion deltas; a backend that sends only the top-level fields speaks for completion 0."""
    if chunk.completions:
        return chunk.completions
    if chunk.text or chunk.token_ids or chunk.finish_reason:
        return [CompletionDelta(0, chunk.text, list(chunk.token_ids), chunk.finish_reason)]
    return []


@dataclass(slots=True)
class Choice:
    index: int
    parts: list[str] = field(default_factory=list)
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[TokenLogprob] | None = None
    finish_reason: str | None = None
    cumulative_logprob: float | None = None
    tool_calls: list[dict] | None = None  # an upstream's native calls, merged from their deltas (OpenAI's shape)

    @property
    def text(self) -> str:
        return "".join(self.parts)


def merge_calls(calls: list[dict], deltas: list[dict]) -> list[dict]:
    """Tool calls so far plus streamed deltas: a delta with a new index starts a call (id, name), later ones
    with the same index add argument fragments."""
    by_index = {c["index"]: c for c in calls}
    for d in deltas:
        fn = d.get("function") or {}
        call = by_index.get(d["index"])
        if call is None:
            call = by_index[d["index"]] = {"index": d["index"], "id": d.get("id") or "", "type": "function",
                                           "function": {"name": fn.get("name") or "", "arguments": ""}}
        elif d.get("id"):
            call["id"] = d["id"]
        if fn.get("name") and not call["function"]["name"]:
            call["function"]["name"] = fn["name"]
        call["function"]["arguments"] += fn.get("arguments") or ""
    return [by_index[i] for i in sorted(by_index)]


class Choices:
    def __init__(self) -> None:
        self._by_index: dict[int, Choice] = {}

    def add(self, chunk: GenerationChunk) -> list[CompletionDelta]:
        """Fold a chunk in; returns its deltas."""
        deltas = deltas_of(chunk)
        for d in deltas:
            c = self._by_index.setdefault(d.index, Choice(d.index))
            c.parts.append(d.text)
            c.token_ids.extend(d.token_ids)
            if d.logprobs is not None:
                c.logprobs = (c.logprobs or []) + d.logprobs
            c.finish_reason = d.finish_reason or c.finish_reason
            if d.cumulative_logprob is not None:
                c.cumulative_logprob = d.cumulative_logprob
            if d.tool_calls:
                c.tool_calls = merge_calls(c.tool_calls or [], d.tool_calls)
        return deltas

    def first(self) -> Choice:
        return self._by_index.get(0) or Choice(0)

    def best(self, n: int) -> list[Choice]:
        """The n completions to return, renumbered 0..n-1: all of them, or with best_of the n the model found
        likeliest (highest cumulative logprob)."""
        ordered = [self._by_index[i] for i in sorted(self._by_index)]
        if len(ordered) > n:
            ordered = sorted(ordered, key=lambda c: c.cumulative_logprob or float("-inf"), reverse=True)[:n]
        for i, c in enumerate(ordered):
            c.index = i
        return ordered
