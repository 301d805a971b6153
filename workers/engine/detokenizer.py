"""Incremental detokenization and stop strings for one request.

Decoding token by token is wrong for byte-level vocabularies: one UTF-8 character may span
several tokens, and a lone token decodes to U+FFFD. So each update decodes a short window of
recent tokens twice, with and without the new ones, and emits the difference once it no longer
ends in an incomplete character.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from workers.engine.stop_matcher import StopMatcher

_REPLACEMENT = "\ufffd"
_CONTEXT_TOKENS = 5  # prompt tokens decoded before the output, for tokenizers whose spacing needs context


class Decoder(Protocol):
    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str: ...


class IncrementalDetokenizer:
    def __init__(self, tokenizer: Decoder, stop: list[str], prompt_token_ids: Sequence[int] = (),
                 skip_special_tokens: bool = True, *, min_tokens: int = 0, include_stop: bool = False) -> None:
        self._tokenizer = tokenizer
        self._stops = StopMatcher(list(stop))
        self._skip_special = skip_special_tokens
        self._min_tokens = min_tokens  # stop strings are looked for once more tokens than this are out
        self._include_stop = include_stop  # a matched stop string stays at the end of the text
        self._num_tokens = 0  # output tokens fed
        self._ids = list(prompt_token_ids[-_CONTEXT_TOKENS:])
        self._prefix_offset = 0  # window start: decoded only to measure what is new
        self._read_offset = len(self._ids)  # tokens before this are already in `text`
        self.text = ""  # decoded output, truncated before a stop string once one appears
        self.stopped = False  # a stop string was found: the request is over

    def update(self, new_token_ids: list[int]) -> bool:
        """Feed new output tokens; returns True when a stop string has ended the text."""
        if self.stopped or not new_token_ids:
            return self.stopped
        self._ids.extend(new_token_ids)
        self._num_tokens += len(new_token_ids)
        delta = self._decode_new(flush=False)
        self.text += delta
        return self._truncate_at_stop(len(delta))

    def flush(self) -> None:
        """At the end of the request: emit whatever is left, incomplete characters included."""
        if not self.stopped:
            delta = self._decode_new(flush=True)
            self.text += delta
            self._truncate_at_stop(len(delta))

    def visible_text(self, finished: bool) -> str:
        """Text safe to show: a tail that could still grow into a stop string is held back."""
        if finished or self.stopped:
            return self.text
        return self.text[:len(self.text) - self._partial_stop_len()]

    def _decode_new(self, flush: bool) -> str:
        before = self._decode(self._ids[self._prefix_offset:self._read_offset])
        after = self._decode(self._ids[self._prefix_offset:])
        if not flush and (len(after) <= len(before) or after.endswith(_REPLACEMENT)):
            return ""  # an incomplete character: wait for the tokens that finish it
        self._prefix_offset, self._read_offset = self._read_offset, len(self._ids)
        return after[len(before):]

    def _decode(self, ids: list[int]) -> str:
        return self._tokenizer.decode(ids, skip_special_tokens=self._skip_special) if ids else ""

    def _truncate_at_stop(self, delta_len: int) -> bool:
        # Only a match that ends inside the new text is new: earlier ones were looked for already. The matcher
        # sees every character, so a stop string that began before min_tokens was reached is still found.
        hit = self._stops.feed(self.text[len(self.text) - delta_len:]) if delta_len else None
        if hit is not None and self._num_tokens > self._min_tokens:  # min_tokens: vLLM's rule
            start, length = hit
            self.text = self.text[:start + length if self._include_stop else start]
            self.stopped = True
        return self.stopped

    def _partial_stop_len(self) -> int:
        """Length of the longest tail of `text` that is a proper prefix of some stop string."""
        return self._stops.partial_len()
