"""FakeRunner that verifies drafts the way the real runner does, for the fake engine's deterministic 'model'.

It writes every computed token, drafts included, into its simulated KV slots, and FakeRunner's check that
attention reads only the sequence's own tokens then catches any rollback that keeps a rejected draft's
slot as computed."""
from __future__ import annotations

from tests.workers.engine.fakes import EOS, FakeRunner, next_printable


class SpecFakeRunner(FakeRunner):
    def __init__(self, config, **kw) -> None:
        super().__init__(config, **kw)
        self.verified: list[tuple[int, int]] = []  # (drafts, accepted) per verified row

    def _compute(self, s) -> list[int]:
        if not s.num_draft_tokens:
            return super()._compute(s)
        seq, bs = s.seq, self.block_size
        ids = s.input_ids
        end = s.start + len(ids)
        if len(seq.block_table) * bs < end:
            raise RuntimeError(f"{seq.request_id}: blocks {seq.block_table} do not cover {end} tokens")
        for pos in range(s.start):
            slot = self.kv[seq.block_table[pos // bs]][pos % bs]
            if slot != seq.token_ids[pos]:
                raise RuntimeError(f"{seq.request_id}: KV slot {pos} holds {slot}, expected {seq.token_ids[pos]}")
        for j, token in enumerate(ids):
            pos = s.start + j
            self.kv[seq.block_table[pos // bs]][pos % bs] = token
        kept = []
        for j in range(len(ids)):
            target = self._target(seq, ids[j], j)
            kept.append(target)
            if j == s.num_draft_tokens or ids[j + 1] != target:
                break
        self.verified.append((s.num_draft_tokens, len(kept) - 1))
        return kept

    def _target(self, seq, last: int, ahead: int) -> int:
        """The token the fake model gives after `last`, `ahead` tokens past the sequence's end."""
        if self.reply is not None:
            n = seq.num_output_tokens + ahead
            return self.reply[n] if n < len(self.reply) else EOS
        if seq.params.temperature > 0:
            return self._draw(seq, seq.index)
        return next_printable(last)
