"""StructuredOutput -> a grammar compiled by llguidance against the engine's tokenizer, once per distinct spec.

Compiling is eager, at submission: a spec that does not compile is a ValueError naming `structured`, before
the request reaches the engine loop. llguidance builds parts of a grammar lazily, so a compile also computes
the first token mask, where the rest of its errors show. The result, a matcher in its initial state, is
cached (LRU, keyed by the spec's canonical text) and only ever copied, so a repeated schema costs a dict
lookup and each completion's matcher a deep copy (~1 us).

Thread-safety: the async engine compiles on the event loop while the engine thread copies templates; a
lock guards the cache, and a template is never advanced once published.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import llguidance
import numpy as np
from llguidance import LLMatcher, LLParserLimits, LLTokenizer
from tokenizers import Tokenizer as BackendTokenizer

from workers.structured.spec import StructuredOutput

# JSON as the models write it (json.dumps' separators), with no free whitespace: a small model cannot then
# pad a value with newlines until max_tokens. A schema's own "x-guidance" options override these.
JSON_OPTIONS = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}


def _json_schema(schema: object) -> str:
    return LLMatcher.grammar_from_json_schema(schema, defaults=JSON_OPTIONS)


# kind -> llguidance grammar text. "grammar" takes Lark or GBNF (converted to Lark).
GRAMMARS: dict[str, Callable[[object], str]] = {
    "json_object": lambda _: _json_schema({"type": "object"}),
    "json_schema": _json_schema,
    "regex": LLMatcher.grammar_from_regex,
    "grammar": lambda text: llguidance.grammar_from("grammar", text),
}

# Errors without llguidance's parser-state dump (it would carry the grammar and the output into logs).
_LIMITS = LLParserLimits(verbose_errors=False)


class GrammarTokenizer(Protocol):
    """What the compiler reads of a tokenizer (workers.model.tokenizer.Tokenizer is one)."""

    backend: BackendTokenizer  # a `tokenizers` tokenizer: llguidance reads its JSON
    vocab_size: int
    eos_token_ids: set[int]


@dataclass(frozen=True, slots=True)
class CompiledGrammar:
    """A spec compiled for one tokenizer. `template` is a matcher in the initial state, never advanced."""

    key: tuple[str, str]
    template: LLMatcher
    mask_words: int  # int32 words in one token bitmask: ceil(tokenizer vocab / 32)
    eos_token_ids: tuple[int, ...]

    def matcher(self) -> LLMatcher:
        """A fresh matcher for one completion."""
        return self.template.deep_copy()


class GrammarCompiler:
    def __init__(self, tokenizer: GrammarTokenizer, *, cache_size: int = 256) -> None:
        if cache_size < 1:
            raise ValueError(f"cache_size must be >= 1, got {cache_size}")
        self._tokenizer = tokenizer
        self._lltokenizer: LLTokenizer | None = None  # built on the first compile (~0.3 s for a 49k vocabulary)
        self._cache: OrderedDict[tuple[str, str], CompiledGrammar] = OrderedDict()
        self.cache_size = cache_size
        self._lock = threading.Lock()

    def compile(self, spec: StructuredOutput) -> CompiledGrammar:
        """The spec's compiled grammar; ValueError naming `structured` if it does not compile."""
        with self._lock:
            hit = self._cache.get(spec.key)
            if hit is not None:
                self._cache.move_to_end(spec.key)
                return hit
            compiled = self._compile(spec)
            self._cache[spec.key] = compiled
            if len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
            return compiled

    def __len__(self) -> int:
        return len(self._cache)

    def _compile(self, spec: StructuredOutput) -> CompiledGrammar:
        tokenizer = self._llguidance_tokenizer()
        try:
            grammar = GRAMMARS[spec.kind](spec.value)
        except ValueError as exc:
            raise ValueError(f"structured: invalid {spec.kind}: {exc}") from exc
        matcher = LLMatcher(tokenizer, grammar, log_level=0, limits=_LIMITS)
        words = (tokenizer.vocab_size + 31) // 32
        mask = np.zeros(words, dtype=np.int32)
        if not matcher.is_error():
            matcher.unsafe_compute_mask_ptr(mask.ctypes.data, mask.nbytes)  # the lazily built parts
        if matcher.is_error():
            raise ValueError(f"structured: invalid {spec.kind}: {matcher.get_error().strip()}")
        if not mask.any():
            raise ValueError(f"structured: the {spec.kind} admits no output")
        return CompiledGrammar(spec.key, matcher, words, tuple(sorted(self._tokenizer.eos_token_ids)))

    def _llguidance_tokenizer(self) -> LLTokenizer:
        if self._lltokenizer is None:
            tok = self._tokenizer
            self._lltokenizer = LLTokenizer(tok.backend.to_str(), n_vocab=tok.vocab_size,
                                            eos_token=sorted(tok.eos_token_ids))
        return self._lltokenizer
