"""Next-token sampling, one row of logits per draw:

1. logprobs of the model's raw distribution (log_softmax in float32, before anything below), for rows
   that want them: the values then mean the same whatever a request's sampling settings, as vLLM's
   default raw logprobs do;
2. penalties (repetition over prompt + output, presence and frequency over output) and the min_tokens
   mask of stop tokens, in place, on the rows that have them only;
3. structured rows (a compiled grammar on the sequence): the tokens their grammar allows next, by a
   bitmask (workers.structured.masker), on those rows only;
4. greedy rows: the argmax; other rows: temperature, min-p, top-k, top-p, then a draw from a seeded
   generator per completion.

A batch of plain rows (no penalties, no min_tokens, no logprobs, no grammar) runs exactly what it did
before these features: one argmax, and filtered_probs over its sampled rows.
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import torch

from workers.outputs import TokenLogprob
from workers.sampling_params import SamplingParams
from workers.structured.masker import GrammarMasker

if TYPE_CHECKING:
    from workers.structured.compiler import CompiledGrammar


class SampleSource(Protocol):
    """What the sampler reads of a sequence (workers.engine.sequence.Sequence is one)."""

    request_id: str
    index: int
    params: SamplingParams
    token_ids: list[int]
    num_prompt_tokens: int
    grammar: CompiledGrammar | None


@dataclass(slots=True)
class SamplerOutput:
    token_ids: list[int]
    logprobs: list[TokenLogprob | None] | None  # None when no row wants logprobs


def filtered_probs(logits: torch.Tensor, temperature: torch.Tensor, top_k: torch.Tensor,
                   top_p: torch.Tensor, min_p: torch.Tensor | None = None) -> torch.Tensor:
    """logits [N, V] float32; per-row temperature (> 0), top_k (0: off), top_p (1: off), min_p (0 or None:
    off) -> probs [N, V]."""
    logits = logits / temperature.unsqueeze(1)
    if min_p is not None:
        # p < min_p * p_max  <=>  logit < logit_max + log(min_p); log(0) = -inf keeps every token.
        floor = logits.max(dim=1, keepdim=True).values + min_p.log().unsqueeze(1)
        logits = logits.masked_fill(logits < floor, float("-inf"))
    vocab = logits.shape[1]
    k = top_k.clamp(max=vocab)
    if bool((k > 0).any()):
        kth = logits.topk(int(k.max()), dim=1).values  # [N, k_max], sorted descending
        threshold = kth.gather(1, (k - 1).clamp(min=0).unsqueeze(1))
        threshold = torch.where(k.unsqueeze(1) > 0, threshold, torch.full_like(threshold, float("-inf")))
        logits = logits.masked_fill(logits < threshold, float("-inf"))
    probs = torch.softmax(logits, dim=1)
    if bool((top_p < 1).any()):
        sorted_probs, order = probs.sort(dim=1, descending=True)
        # Keep the smallest prefix whose mass reaches top_p: drop a token when the mass before it already does.
        drop = (sorted_probs.cumsum(dim=1) - sorted_probs) >= top_p.unsqueeze(1)
        probs = torch.zeros_like(probs).scatter_(1, order, sorted_probs.masked_fill(drop, 0.0))
    return probs


def argmax_rows(logits: torch.Tensor, rows: list[int]) -> list[int]:
    """One token per row of logits [N, V]: the argmax for the greedy rows listed in `rows`, 0 (to be drawn) for
    the others. A row that samples needs no argmax, and at SmolLM's 49,152 tokens torch's argmax costs about
    1 ms for 16 rows on a 2-core CPU, more than the draw itself."""
    if len(rows) == logits.shape[0]:
        return logits.argmax(dim=1).tolist()
    tokens = [0] * logits.shape[0]
    if rows:
        for i, token in zip(rows, logits[rows].argmax(dim=1).tolist()):
            tokens[i] = token
    return tokens


def inverse_cdf(probs: torch.Tensor, draws: torch.Tensor) -> list[int]:
    """probs [N, V] (rows need not sum to 1), draws [N] uniform in [0, 1) -> one token per row, drawn with the
    row's probabilities: the first token whose cumulative mass exceeds draw x total. One uniform per row where
    torch.multinomial draws V exponentials (on the CPU 1 ms a row at SmolLM's 49,152 tokens: 16 rows cost a
    third of a decode step). A token of probability 0 is never drawn: its cumulative mass equals its
    predecessor's."""
    cdf = probs.cumsum(dim=1)
    total = cdf[:, -1:]
    picked = torch.searchsorted(cdf, draws.unsqueeze(1) * total, right=True).squeeze(1)
    out = picked.tolist()
    for row, token in enumerate(out):
        if token >= probs.shape[1]:  # draw x total rounded up to the total: the last token with mass
            out[row] = int(probs[row].nonzero()[-1])
    return out


def apply_penalties(logits: torch.Tensor, rows: list[int], sources: list[SampleSource]) -> None:
    """In place on logits [N, V] rows `rows` (sources aligned with them): repetition penalty over
    prompt + output tokens (HF/vLLM: a positive logit divided, a negative one multiplied), then
    logit -= frequency_penalty * count + presence_penalty * [count > 0] over output tokens."""
    params = [s.params for s in sources]
    index = torch.tensor(rows, dtype=torch.long, device=logits.device)
    sub = logits.index_select(0, index)  # [R, V]
    counts = _token_counts(sub, [s.token_ids[s.num_prompt_tokens:] for s in sources])  # [R, V] output counts
    if any(p.repetition_penalty != 1 for p in params):
        seen = _token_counts(sub, [s.token_ids[:s.num_prompt_tokens] for s in sources]).add_(counts) > 0
        rep = _column([p.repetition_penalty for p in params], sub)
        sub = torch.where(seen, torch.where(sub > 0, sub / rep, sub * rep), sub)
    if any(p.frequency_penalty != 0 or p.presence_penalty != 0 for p in params):
        freq = _column([p.frequency_penalty for p in params], sub)
        presence = _column([p.presence_penalty for p in params], sub)
        sub = sub - freq * counts - presence * (counts > 0).to(sub.dtype)
    logits.index_copy_(0, index, sub)


def _token_counts(like: torch.Tensor, token_lists: list[list[int]]) -> torch.Tensor:
    """[R, V] float counts of each row's tokens, by one scatter_add over the flattened rows."""
    rows, vocab = like.shape
    counts = torch.zeros(rows * vocab, dtype=like.dtype, device=like.device)
    flat = [r * vocab + t for r, tokens in enumerate(token_lists) for t in tokens if t < vocab]
    if flat:
        index = torch.tensor(flat, dtype=torch.long, device=like.device)
        counts.scatter_add_(0, index, torch.ones(len(flat), dtype=like.dtype, device=like.device))
    return counts.view(rows, vocab)


def _column(values: list[float], like: torch.Tensor) -> torch.Tensor:
    return torch.tensor(values, dtype=like.dtype, device=like.device).unsqueeze(1)


class Sampler:
    def __init__(self, seed: int, device: torch.device | str = "cpu",
                 eos_token_ids: set[int] | frozenset[int] = frozenset()) -> None:
        # Requests without a seed of their own draw one from this stream: a run is reproducible end to end.
        self._seeds = torch.Generator().manual_seed(seed)
        # request id -> completion index -> generator, on the logits' device, so sampling stays there.
        self._generators: dict[str, dict[int, torch.Generator]] = {}
        self.device = torch.device(device)
        self.eos_token_ids = frozenset(eos_token_ids)  # masked with stop_token_ids while min_tokens is unmet
        self.grammars = GrammarMasker(self.device)  # structured rows' matchers, keyed like the generators

    def _generator(self, request_id: str, index: int, params: SamplingParams) -> torch.Generator:
        gens = self._generators.setdefault(request_id, {})
        gen = gens.get(index)
        if gen is None:
            if params.seed is None:
                seed = int(torch.randint(2**62, (1,), generator=self._seeds))
            else:
                seed = params.seed if index == 0 else _completion_seed(params.seed, index)
            gen = gens[index] = torch.Generator(device=self.device).manual_seed(seed)
        return gen

    def generator(self, source: SampleSource) -> torch.Generator:
        """The seeded stream source's completion draws from (speculative verification draws from it too)."""
        return self._generator(source.request_id, source.index, source.params)

    def release(self, request_id: str) -> None:
        self._generators.pop(request_id, None)
        self.grammars.release(request_id)

    def sample(self, logits: torch.Tensor, sources: Sequence[SampleSource],
               indices: list[int] | None = None) -> SamplerOutput:
        """logits [N, V] float32, one row per draw, for sources[i]'s completion indices[i] (default: its own
        index; a parent's first sample draws completions 0..n-1 from copies of one row). Greedy rows are the
        exact argmax. Penalties and masks are applied to `logits` in place."""
        params = [s.params for s in sources]
        indices = [s.index for s in sources] if indices is None else indices
        want_lp = [i for i, p in enumerate(params) if p.wants_logprob]
        raw_logprobs = torch.log_softmax(logits[want_lp], dim=1) if want_lp else None  # before any change
        penalised = [i for i, p in enumerate(params) if p.has_penalties]
        if penalised:
            apply_penalties(logits, penalised, [sources[i] for i in penalised])
        self._mask_stop_tokens(logits, sources)
        if any(s.grammar is not None for s in sources):
            self.grammars.apply(logits, sources, indices)
        rows = [i for i, p in enumerate(params) if not p.greedy]
        tokens = argmax_rows(logits, [i for i, p in enumerate(params) if p.greedy])
        if rows:
            picked = [params[i] for i in rows]
            probs = filtered_probs(
                logits[rows],
                torch.tensor([p.temperature for p in picked], dtype=logits.dtype, device=logits.device),
                torch.tensor([max(p.top_k, 0) for p in picked], dtype=torch.long, device=logits.device),
                torch.tensor([p.top_p for p in picked], dtype=logits.dtype, device=logits.device),
                torch.tensor([p.min_p for p in picked], dtype=logits.dtype, device=logits.device)
                if any(p.min_p > 0 for p in picked) else None,
            )
            draws = torch.cat([torch.rand(1, generator=self._generator(sources[i].request_id, indices[i], params[i]),
                                          device=logits.device, dtype=logits.dtype) for i in rows])
            for i, token in zip(rows, inverse_cdf(probs, draws)):
                tokens[i] = token
        logprobs: list[TokenLogprob | None] | None = None
        if raw_logprobs is not None:
            logprobs = [None] * len(tokens)
            for i, lp in zip(want_lp, token_logprobs(raw_logprobs, [tokens[i] for i in want_lp],
                                                      [params[i].logprobs or 0 for i in want_lp])):
                logprobs[i] = lp
        return SamplerOutput(tokens, logprobs)

    def _mask_stop_tokens(self, logits: torch.Tensor, sources: Sequence[SampleSource]) -> None:
        """min_tokens: while fewer are out, no stop token (stop_token_ids, and EOS unless ignored) may be drawn."""
        rows: list[int] = []
        ids: list[int] = []
        vocab = logits.shape[1]
        for i, s in enumerate(sources):
            p = s.params
            if p.min_tokens and len(s.token_ids) - s.num_prompt_tokens < p.min_tokens:
                stop = [t for t in set(p.stop_token_ids) | (set() if p.ignore_eos else self.eos_token_ids)
                        if t < vocab]
                ids += stop
                rows += [i] * len(stop)
        if rows:
            device = logits.device
            logits.index_put_((torch.tensor(rows, device=device), torch.tensor(ids, device=device)),
                              torch.tensor(float("-inf"), dtype=logits.dtype, device=device))


def token_logprobs(logprobs: torch.Tensor, tokens: list[int], num_top: list[int]) -> list[TokenLogprob]:
    """logprobs [R, V]: each row's sampled token's logprob and its num_top best alternatives."""
    index = torch.tensor(tokens, dtype=torch.long, device=logprobs.device).unsqueeze(1)
    chosen = logprobs.gather(1, index).squeeze(1).tolist()
    k = max(num_top)
    top_values: list[list[float]] = [[]] * len(tokens)
    top_ids: list[list[int]] = [[]] * len(tokens)
    if k:
        values, ids = logprobs.topk(k, dim=1)
        top_values, top_ids = values.tolist(), ids.tolist()
    return [TokenLogprob(t, lp, tuple(zip(ids[:n], values[:n])))
            for t, lp, ids, values, n in zip(tokens, chosen, top_ids, top_values, num_top)]


def _completion_seed(seed: int, index: int) -> int:
    """Completion i > 0 of a seeded request draws from its own stream, reproducible from (seed, i)."""
    digest = hashlib.blake2b(f"{seed}/{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1
