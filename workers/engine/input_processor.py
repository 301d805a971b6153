"""Turns a request into a Sequence, or a ValueError naming the bad field.

Stateless apart from the tokenizer and the grammar compiler's cache (which has its own lock), so the
async engine can call it on the event loop and a bad request is refused before it reaches the engine loop;
a grammar compiles in the compiler's threads (compile_grammar), never on that loop.
"""
from __future__ import annotations

from collections.abc import Sequence as Seq
from typing import Any, Protocol

from jinja2 import TemplateError

from workers.engine.sequence import Sequence
from workers.sampling_params import SamplingParams
from workers.schedule_params import ScheduleParams
from workers.structured.compiler import CompiledGrammar, GrammarCompiler


# A prompt longer than the engine's limit times this many characters is first judged by its head's tokens.
HEAD_CHARS_PER_TOKEN = 8
PREFIX_SLACK = 16  # tokens a head cut at a space may count beyond the same text inside the whole prompt


class PromptTokenizer(Protocol):
    vocab_size: int

    def encode(self, text: str) -> list[int]: ...

    def apply_chat_template(self, messages: list[dict[str, Any]], add_generation_prompt: bool = True) -> list[int]: ...

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str: ...


class InputProcessor:
    def __init__(self, tokenizer: PromptTokenizer, *, max_model_len: int, kv_capacity_tokens: int,
                 block_size: int, shared_prefixes: Seq[str | list[dict[str, Any]]] = (),
                 max_num_seqs: int | None = None, grammars: GrammarCompiler | None = None) -> None:
        self.tokenizer = tokenizer
        self.grammars = grammars  # compiles SamplingParams.structured; None: structured requests are refused
        self.max_num_seqs = max_num_seqs  # n completions run side by side: no more than the batch holds
        self.max_model_len = max_model_len
        self.kv_capacity_tokens = kv_capacity_tokens
        self.block_size = block_size
        # Token ids of the operator's public prefixes, longest first (the longest match wins).
        self.public_prefixes = sorted((self._prefix_ids(p) for p in shared_prefixes), key=len, reverse=True)

    def tokenize(self, prompt: str | list[int] | None = None, messages: list[dict[str, Any]] | None = None, *,
                 add_generation_prompt: bool = True) -> list[int]:
        if (prompt is None) == (messages is None):
            raise ValueError("prompt: give exactly one of prompt or messages")
        self._refuse_surely_too_long(prompt, messages, add_generation_prompt)
        ids = self._tokenize_messages(messages, add_generation_prompt) if messages is not None \
            else self._tokenize_prompt(prompt)
        self._check_length(ids)
        return ids

    async def compile_grammar(self, params: SamplingParams | None) -> CompiledGrammar | None:
        """The request's grammar, compiled in the compiler's threads while the caller's event loop goes on
        (then pass it to make_sequence); None when it asks for none. ValueError naming `structured`."""
        if not isinstance(params, SamplingParams) or params.structured is None or self.grammars is None:
            return None  # make_sequence says what is wrong
        return await self.grammars.compile_async(params.structured)

    def make_sequence(self, request_id: str, prompt: str | list[int] | None = None, *,
                      messages: list[dict[str, Any]] | None = None, params: SamplingParams | None = None,
                      cache_salt: str | None = None, schedule: ScheduleParams | None = None,
                      grammar: CompiledGrammar | None = None) -> Sequence:
        """`cache_salt`: an opaque per-tenant string; prefix-cache blocks past the public prefix
        are reused only by requests with the same salt. None shares them with every caller. `grammar`: the
        params' structured spec already compiled (compile_grammar); else it is compiled here."""
        if not isinstance(request_id, str) or not request_id:
            raise ValueError(f"request_id must be a non-empty string, got {request_id!r}")
        params = SamplingParams() if params is None else params
        if not isinstance(params, SamplingParams):
            raise ValueError(f"params must be SamplingParams, got {type(params).__name__}")
        if self.max_num_seqs is not None and params.n > self.max_num_seqs:
            raise ValueError(f"n ({params.n}) exceeds this engine's max_num_seqs ({self.max_num_seqs})")
        if cache_salt is not None and (not isinstance(cache_salt, str) or not 0 < len(cache_salt) <= 256):
            raise ValueError("cache_salt must be a non-empty string of at most 256 characters")
        ids = self.tokenize(prompt, messages)
        seq = Sequence(request_id, list(ids), len(ids), params, self.block_size, cache_salt=cache_salt,
                       grammar=grammar or self._grammar(params), schedule=schedule or ScheduleParams())
        seq.num_public_tokens = self.public_prefix_len(ids)
        return seq

    def _grammar(self, params: SamplingParams) -> CompiledGrammar | None:
        if params.structured is None:
            return None
        if self.grammars is None:
            raise ValueError("structured: this engine does not support structured output")
        return self.grammars.compile(params.structured)  # the compiled grammar, or a ValueError naming `structured`

    def public_prefix_len(self, ids: list[int]) -> int:
        """Length of the longest declared public prefix that `ids` starts with (0: none)."""
        for p in self.public_prefixes:
            if len(p) <= len(ids) and ids[:len(p)] == p:
                return len(p)
        return 0

    def _prefix_ids(self, prefix: str | list[dict[str, Any]]) -> list[int]:
        if isinstance(prefix, str):
            return self.tokenizer.encode(prefix)
        return list(self.tokenizer.apply_chat_template(prefix, add_generation_prompt=False))

    def _tokenize_prompt(self, prompt: object) -> list[int]:
        if isinstance(prompt, str):
            if not prompt:
                raise ValueError("prompt must not be empty")
            return self.tokenizer.encode(prompt)
        if not isinstance(prompt, list) or not prompt:
            raise ValueError("prompt must be a non-empty string or a non-empty list of token ids")
        vocab = self.tokenizer.vocab_size
        if not all(isinstance(t, int) and not isinstance(t, bool) and 0 <= t < vocab for t in prompt):
            raise ValueError(f"prompt token ids must be integers in [0, {vocab})")
        return list(prompt)

    def _tokenize_messages(self, messages: object, add_generation_prompt: bool = True) -> list[int]:
        if not isinstance(messages, list) or not messages:
            raise ValueError("messages must be a non-empty list")
        for i, m in enumerate(messages):
            if not isinstance(m, dict) or not isinstance(m.get("role"), str) or not m["role"]:
                raise ValueError(f"messages[{i}] must be a dict with a non-empty string 'role'")
            if not isinstance(m.get("content"), str):
                raise ValueError(f"messages[{i}] must have a string 'content'")
        try:
            ids = self.tokenizer.apply_chat_template(messages, add_generation_prompt=add_generation_prompt)
        except (TemplateError, KeyError, TypeError, ValueError) as exc:
            # The template itself refuses the conversation (e.g. an unknown role).
            raise ValueError(f"messages: the chat template rejected them: {exc}") from exc
        if not ids:
            raise ValueError("messages rendered to an empty prompt")
        return list(ids)

    def detokenize(self, token_ids: list[int]) -> str:
        """The text of token ids (special tokens spelled out); ValueError for an id outside the vocabulary."""
        vocab = self.tokenizer.vocab_size
        if not all(isinstance(t, int) and not isinstance(t, bool) and 0 <= t < vocab for t in token_ids):
            raise ValueError(f"token ids must be integers in [0, {vocab})")
        return self.tokenizer.decode(list(token_ids), skip_special_tokens=False)

    def _refuse_surely_too_long(self, prompt: object, messages: object, add_generation_prompt: bool) -> None:
        """A text far longer than the engine takes is refused from the tokens of its head alone: tokenizing a
        megabyte to find it too long cost a second of CPU per request. The head is cut at a space, where the
        whole text's tokens split too (a cut word could tokenize longer than it does whole), and counted with
        PREFIX_SLACK tokens to spare; a head that fits says nothing, and the whole text is tokenized."""
        limit = min(self.max_model_len, self.kv_capacity_tokens)
        head_chars = limit * HEAD_CHARS_PER_TOKEN
        text = prompt if isinstance(prompt, str) else None
        render = getattr(self.tokenizer, "render_chat", None)
        if text is None and render is not None and isinstance(messages, list) and \
                sum(len(m.get("content") or "") for m in messages if isinstance(m, dict)
                    and isinstance(m.get("content"), str)) > head_chars:
            try:
                text = render(messages, add_generation_prompt)
            except (TemplateError, KeyError, TypeError, ValueError):
                return  # _tokenize_messages says why
        if text is None or len(text) <= head_chars:
            return
        cut = text.rfind(" ", 0, head_chars)
        head = len(self.tokenizer.encode(text[:cut if cut > 0 else head_chars]))
        if head > limit + PREFIX_SLACK:
            if limit == self.max_model_len:
                raise ValueError(f"prompt is more than {head - PREFIX_SLACK} tokens, longer than max_model_len "
                                 f"{self.max_model_len}")
            raise ValueError(f"prompt is more than {head - PREFIX_SLACK} tokens; the whole KV cache holds "
                             f"{self.kv_capacity_tokens}")

    def _check_length(self, ids: list[int]) -> None:
        if len(ids) > self.max_model_len:
            raise ValueError(f"prompt is {len(ids)} tokens, longer than max_model_len {self.max_model_len}")
        if len(ids) > self.kv_capacity_tokens:
            raise ValueError(f"prompt is {len(ids)} tokens; the whole KV cache holds {self.kv_capacity_tokens}")
