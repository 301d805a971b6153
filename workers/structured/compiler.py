"""StructuredOutput -> a grammar compiled by llguidance against the engine's tokenizer, once per distinct spec.

Compiling is eager, at submission: a spec that does not compile is a ValueError naming `structured`, before
the request reaches the engine loop. llguidance builds parts of a grammar lazily, so a compile also computes
the first token mask, where the rest of its errors show. The result, a matcher in its initial state, is
cached (LRU, keyed by the spec's canonical text) and only ever copied, so a repeated schema costs a dict
lookup and each completion's matcher a deep copy (~1 us).

Bounded work: one request's spec may not cost the engine more than LIMITS allow (llguidance's parser limits:
`(a{1000}){1000}` took seconds of lexer construction under the library's defaults, and every step's mask after
it), and a compile runs in the compiler's own threads (llguidance releases the GIL), waited on for at most
`timeout_s`: past either, the spec is refused as too costly. Equal specs compiling at the same time share
one compile.

Thread-safety: compiles may be asked for from any thread while the engine thread copies templates; a lock
guards the cache and the compiles in flight (never held while compiling), and a template is never advanced
once published.
"""
from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, Protocol

import llguidance
import numpy as np
from llguidance import LLMatcher, LLParserLimits, LLTokenizer
from tokenizers import Tokenizer as BackendTokenizer

from workers.structured.spec import StructuredOutput

# JSON as the models write it (json.dumps' separators), with no free whitespace: a small model cannot then
# pad a value with newlines until max_tokens. A schema's own "x-guidance" options override these.
JSON_OPTIONS = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}


def _json_schema(schema: str | dict[str, Any]) -> str:
    # llguidance's stub types `defaults` as its JsonCompileOptions TypedDict, which it does not export.
    return LLMatcher.grammar_from_json_schema(schema, defaults=JSON_OPTIONS)  # type: ignore[arg-type]


# kind -> llguidance grammar text. "grammar" takes Lark or GBNF (converted to Lark).
GRAMMARS: dict[str, Callable[[Any], str]] = {
    "json_object": lambda _: _json_schema({"type": "object"}),
    "json_schema": _json_schema,
    "regex": LLMatcher.grammar_from_regex,
    "grammar": lambda text: llguidance.grammar_from("grammar", text),
}

# What one grammar may cost, every bound explicit (the library's speeds in its own words: lexer fuel ~50k/ms
# at build, ~14k/ms in a step; Earley items ~20k/ms). A step's bounds are paid on the engine thread, by every
# sequence of the batch: a few milliseconds at most. Errors come without llguidance's parser-state dump (it
# would carry the grammar and the output into logs).
LIMITS = LLParserLimits(
    initial_lexer_fuel=50_000,  # building the lexer's first regexes: ~1 ms (default 1M; 100k refused
    # `(a{1000}){1000}` in 0.14-0.25 s here, 50k in 0.04-0.05 s, and still takes `(x{100}){100}`)
    step_lexer_fuel=50_000,  # one mask's lexer work: ~4 ms (default 200k)
    step_max_items=20_000,  # one mask's Earley items: ~1 ms (default 50k)
    max_items_in_row=2_000,  # one production row's branching
    max_lexer_states=50_000,  # lexer DFA states, ~1-2 kB each: <= ~100 MB per grammar (default 250k)
    max_grammar_size=200_000,  # symbols in the grammar's productions (default 500k)
    precompute_large_lexemes=True,
    verbose_errors=False,
)
_LIMIT_ERRORS = ("too many", "fuel", "limit", "too large", "too big")  # llguidance's words for a bound it hit


@dataclass(frozen=True, slots=True)
class CompileConfig:
    cache_size: int = 256  # compiled grammars kept (LRU)
    timeout_s: float = 5.0  # how long a request waits for its grammar before it is refused as too costly
    threads: int = 2  # compiles running at once; more wait their turn (within timeout_s)

    def __post_init__(self) -> None:
        if self.cache_size < 1 or self.threads < 1 or self.timeout_s <= 0:
            raise ValueError("cache_size and threads must be >= 1, timeout_s > 0")


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
    def __init__(self, tokenizer: GrammarTokenizer, config: CompileConfig | None = None) -> None:
        self.config = config = config or CompileConfig()
        self._tokenizer = tokenizer
        self._lltokenizer: LLTokenizer | None = None  # built on the first compile (~0.3 s for a 49k vocabulary)
        self._cache: OrderedDict[tuple[str, str], CompiledGrammar] = OrderedDict()
        self._refused: OrderedDict[tuple[str, str], str] = OrderedDict()  # spec key -> why (LRU)
        self._compiling: dict[tuple[str, str], Future] = {}  # spec key -> its compile in flight
        self._pool = ThreadPoolExecutor(config.threads, thread_name_prefix="grammar-compile")
        self._lock = threading.Lock()
        self._tokenizer_lock = threading.Lock()

    def compile(self, spec: StructuredOutput) -> CompiledGrammar:
        """The spec's compiled grammar; ValueError naming `structured` if it does not compile, costs more than
        LIMITS allow, or is not compiled within `timeout_s` (it still finishes, bounded, and is cached)."""
        try:
            return self.submit(spec).result(timeout=self.config.timeout_s)
        except FutureTimeout:
            raise self._too_slow(spec) from None

    async def compile_async(self, spec: StructuredOutput) -> CompiledGrammar:
        """As `compile`, awaited: the event loop goes on while the compiler's threads work."""
        future = asyncio.wrap_future(self.submit(spec))
        try:
            # Shielded: a caller that stops waiting must not cancel a compile others may share.
            return await asyncio.wait_for(asyncio.shield(future), self.config.timeout_s)
        except TimeoutError:
            raise self._too_slow(spec) from None

    def submit(self, spec: StructuredOutput) -> Future:
        """The spec's compile (a Future of its CompiledGrammar): already done when cached, else started in the
        compiler's threads, or the one in flight for an equal spec."""
        with self._lock:
            hit = self._cache.get(spec.key)
            if hit is not None:
                self._cache.move_to_end(spec.key)
                done: Future = Future()
                done.set_result(hit)
                return done
            refused = self._refused.get(spec.key)
            if refused is not None:  # a spec refused once is refused again without a second compile
                done = Future()
                done.set_exception(ValueError(refused))
                return done
            future = self._compiling.get(spec.key)
            if future is None:
                future = self._compiling[spec.key] = self._pool.submit(self._compile_and_keep, spec)
            return future

    def warm(self) -> None:
        """Build llguidance's view of the tokenizer now, in the background (~0.3 s), not in the first spec's
        time."""
        self._pool.submit(self._llguidance_tokenizer)

    def _too_slow(self, spec: StructuredOutput) -> ValueError:
        return ValueError(f"structured: the {spec.kind} is too costly: it did not compile within "
                          f"{self.config.timeout_s:g} s; simplify it")

    def __len__(self) -> int:
        return len(self._cache)

    def _compile_and_keep(self, spec: StructuredOutput) -> CompiledGrammar:
        try:
            compiled = self._compile(spec)
        except ValueError as exc:
            with self._lock:
                _keep(self._refused, spec.key, str(exc), self.config.cache_size)
            raise
        else:
            with self._lock:
                _keep(self._cache, spec.key, compiled, self.config.cache_size)
            return compiled
        finally:
            with self._lock:
                self._compiling.pop(spec.key, None)

    def _compile(self, spec: StructuredOutput) -> CompiledGrammar:
        tokenizer = self._llguidance_tokenizer()
        try:
            grammar = GRAMMARS[spec.kind](spec.value)
        except ValueError as exc:
            raise ValueError(f"structured: invalid {spec.kind}: {exc}") from exc
        matcher = LLMatcher(tokenizer, grammar, log_level=0, limits=LIMITS)
        words = (tokenizer.vocab_size + 31) // 32
        mask = np.zeros(words, dtype=np.int32)
        if not matcher.is_error():
            matcher.unsafe_compute_mask_ptr(mask.ctypes.data, mask.nbytes)  # the lazily built parts
        if matcher.is_error():
            raise ValueError(_refusal(spec.kind, matcher.get_error()))
        if not mask.any():
            raise ValueError(f"structured: the {spec.kind} admits no output")
        eos = tuple(sorted(self._tokenizer.eos_token_ids))
        _probe(spec.kind, matcher, mask, eos)
        return CompiledGrammar(spec.key, matcher, words, eos)

    def _llguidance_tokenizer(self) -> LLTokenizer:
        with self._tokenizer_lock:
            if self._lltokenizer is None:
                tok = self._tokenizer
                self._lltokenizer = LLTokenizer(tok.backend.to_str(), n_vocab=tok.vocab_size,
                                                eos_token=sorted(tok.eos_token_ids))
            return self._lltokenizer


def _probe(kind: str, matcher: LLMatcher, mask: np.ndarray, eos: tuple[int, ...]) -> None:
    """One decode step on a copy: the lexer grows lazily, so a grammar that blows past LIMITS often does so at
    its first token (`(a{1000}){1000}` does), and is better refused now than ended at run time."""
    allowed = np.flatnonzero(np.unpackbits(mask.view(np.uint8), bitorder="little"))
    token = next((int(t) for t in allowed if t not in eos), None)
    if token is None:
        return
    probe = matcher.deep_copy()
    if probe.consume_token(token):
        scratch = np.zeros_like(mask)
        probe.unsafe_compute_mask_ptr(scratch.ctypes.data, scratch.nbytes)
    if probe.is_error():
        raise ValueError(_refusal(kind, probe.get_error()))


def _keep(lru: OrderedDict, key, value, size: int) -> None:
    lru[key] = value
    if len(lru) > size:
        lru.popitem(last=False)


def _refusal(kind: str, error: str) -> str:
    error = error.replace("<non-verbose/>", "").strip()
    if any(word in error.lower() for word in _LIMIT_ERRORS):
        return f"structured: the {kind} is too costly to compile (over this engine's limits: {error}); simplify it"
    return f"structured: invalid {kind}: {error}"
