"""Decode-time grammar enforcement: each structured completion's matcher, and each step's token mask.

Execution layer: the Sampler calls it on the engine thread, the only thread that touches these matchers.
A matcher is keyed like the sampler's generators, by (request id, completion index), and follows its
sequence lazily: before each mask it consumes the output tokens the scheduler appended since the last one.
So the scheduler knows nothing of grammars, and what it does needs nothing here: the children of an n > 1
request start from the template and replay their first token; a preempted sequence keeps its tokens, and
its matcher, through recompute.

The masks are computed on the host (after the forward pass was launched: on a GPU they overlap it) into one
int32 bitmask, one row per structured row of the step, then applied to those logits rows on their device.
Rows without a grammar are never touched.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import torch

from workers.structured.bitmask import apply_token_bitmask

if TYPE_CHECKING:
    from llguidance import LLExecutor, LLMatcher

    from workers.structured.compiler import CompiledGrammar

log = logging.getLogger(__name__)


class GrammarSource(Protocol):
    """What the masker reads of a sequence (workers.engine.sequence.Sequence is one)."""

    request_id: str
    token_ids: list[int]
    num_prompt_tokens: int
    grammar: CompiledGrammar | None


@dataclass(slots=True)
class _Tracked:
    matcher: LLMatcher
    consumed: int = 0  # output tokens fed to the matcher


class GrammarMasker:
    def __init__(self, device: torch.device | str = "cpu") -> None:
        self.device = torch.device(device)
        self._matchers: dict[str, dict[int, _Tracked]] = {}  # request id -> completion index -> matcher
        self._executor: LLExecutor | None = None  # fills several rows' masks in parallel (Rust threads)
        # Host bitmask rows, reused step to step; pinned for a GPU. Reuse is safe: each step's sampling reads
        # the tokens back to the host, which waits for the copy made from it.
        self._host: torch.Tensor | None = None

    def __len__(self) -> int:
        return sum(len(m) for m in self._matchers.values())

    def apply(self, logits: torch.Tensor, sources: Sequence[GrammarSource], indices: list[int]) -> None:
        """In place on logits [N, V]: each row whose source has a grammar keeps only the tokens it allows
        next (only EOS once the value is complete). sources[i] draws completion indices[i]."""
        rows = [i for i, s in enumerate(sources) if s.grammar is not None]
        if not rows:
            return
        grammar = sources[rows[0]].grammar
        if grammar is None:  # rows holds only sources with a grammar
            return
        matchers = [self._synced(sources[i], indices[i]) for i in rows]
        bitmask = self._fill(matchers, grammar.mask_words)  # [R, W] on the host
        self._fail_closed(bitmask, matchers, [sources[i] for i in rows], grammar.eos_token_ids)
        apply_token_bitmask(logits, torch.tensor(rows, dtype=torch.long, device=logits.device), bitmask)

    def release(self, request_id: str) -> None:
        self._matchers.pop(request_id, None)

    def _synced(self, seq: GrammarSource, index: int) -> LLMatcher:
        per_request = self._matchers.setdefault(seq.request_id, {})
        tracked = per_request.get(index)
        if tracked is None:
            assert seq.grammar is not None  # only sources with a grammar are synced
            tracked = per_request[index] = _Tracked(seq.grammar.matcher())
        new = seq.token_ids[seq.num_prompt_tokens + tracked.consumed:]
        if new:
            tracked.matcher.consume_tokens(new)  # a refused token leaves the matcher in error: see _fail_closed
            tracked.consumed += len(new)
        return tracked.matcher

    def _fill(self, matchers: list[LLMatcher], words: int) -> torch.Tensor:
        rows = len(matchers)
        if self._host is None or self._host.shape[0] < rows or self._host.shape[1] != words:
            self._host = torch.empty((max(rows, 8), words), dtype=torch.int32,
                                     pin_memory=self.device.type == "cuda")
        bitmask = self._host[:rows]  # [R, W], contiguous
        if rows == 1:
            matchers[0].unsafe_compute_mask_ptr(bitmask.data_ptr(), words * 4)
        else:
            if self._executor is None:
                from llguidance import LLExecutor

                self._executor = LLExecutor()
            self._executor.unsafe_compute_mask_ptr([(m, j) for j, m in enumerate(matchers)], bitmask.data_ptr(),
                                                   words * 4, rows)
        return bitmask

    def _fail_closed(self, bitmask: torch.Tensor, matchers: list[LLMatcher], sources: list[GrammarSource],
                     eos_token_ids: tuple[int, ...]) -> None:
        """A matcher in error (a token it refused reached its sequence) or a mask that allows nothing would
        leave a row with no token to draw: that row may draw EOS only, and the completion ends."""
        empty = (bitmask == 0).all(dim=1).tolist()
        for j, (m, seq) in enumerate(zip(matchers, sources)):
            if m.is_error() or empty[j]:
                log.error("structured output of %s: %s; ending the completion", seq.request_id,
                          m.get_error() or "the grammar allows no token")
                row = bitmask[j].view(torch.uint8)  # little-endian words: token t is bit t % 8 of byte t // 8
                row.zero_()
                for t in eos_token_ids:
                    row[t // 8] |= 1 << (t % 8)
