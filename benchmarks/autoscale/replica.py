"""How fast one replica serves, from two measured points of the engine.

A decode step over n sequences takes a + b*n seconds: a fixed part (reading the weights) and a part per
sequence (its KV cache, its logits). Two measurements fix a and b: the batch-1 decode speed (one token per
step) and the full-batch throughput (full_batch tokens per step). A replica with n requests in its batch
then produces n / (a + b*n) tokens/s, each request 1 / (a + b*n); beyond max_num_seqs requests wait."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class ReplicaModel:
    full_batch_tok_s: float = 412.6  # engine_throughput.py, 32 requests at once (median of 3, docs/testing.md)
    full_batch: int = 32
    batch1_tok_s: float = 66.5  # same run, one request alone
    prefill_tok_s: float = 1300.0  # one 36.6-token chat prompt: TTFT 28 ms (docs/testing.md, engine one request)
    max_num_seqs: int = 64  # deploy/catalogue.yaml, smollm2-135m-instruct@fp32
    step_a: float = 0.0  # derived in __post_init__
    step_b: float = 0.0

    def __post_init__(self) -> None:
        if min(self.full_batch_tok_s, self.batch1_tok_s, self.prefill_tok_s) <= 0:
            raise ValueError("throughputs must be > 0")
        if self.full_batch < 2 or self.max_num_seqs < 1:
            raise ValueError("full_batch must be >= 2 and max_num_seqs >= 1")
        if not self.batch1_tok_s < self.full_batch_tok_s < self.full_batch * self.batch1_tok_s:
            raise ValueError("a full batch must produce more tokens/s than one request, and less than "
                             "full_batch requests each at the batch-1 speed")
        step1, step_full = 1 / self.batch1_tok_s, self.full_batch / self.full_batch_tok_s
        self.step_b = (step_full - step1) / (self.full_batch - 1)
        self.step_a = step1 - self.step_b

    def step_s(self, n: float) -> float:
        """One decode step's duration with n sequences in the batch."""
        return self.step_a + self.step_b * n

    def throughput(self, n: float) -> float:
        """Output tokens/s of one replica holding n requests (capped at max_num_seqs)."""
        n = min(n, self.max_num_seqs)
        return n / self.step_s(n) if n > 0 else 0.0

    def ttft_s(self, n: float, prompt_tokens: float) -> float:
        """An admitted request's time to first token: on a busy replica it waits for the running step to end
        (half a step on average), then its prefill rides one step with the batch."""
        n = min(n, self.max_num_seqs)
        decode = 1.5 * self.step_s(n) if n > 0 else 0.0
        return decode + prompt_tokens / self.prefill_tok_s

    def requests_per_s(self, ongoing: float, mean_output_tokens: float) -> float:
        """Requests/s one replica sustains with `ongoing` requests in its batch."""
        return self.throughput(ongoing) / mean_output_tokens
