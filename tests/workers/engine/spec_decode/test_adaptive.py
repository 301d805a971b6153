import pytest

from workers.engine.sequence import Sequence
from workers.engine.spec_decode.adaptive import AdaptiveDrafting, can_draft
from workers.sampling_params import SamplingParams
from workers.speculative_config import SpeculativeConfig


def decoding(rid="r", prompt=4, out=2, **params):
    """A sequence that has sampled `out` tokens, all but the last computed."""
    p = SamplingParams(**{"max_tokens": 100, "temperature": 0, **params})
    seq = Sequence(rid, list(range(prompt + out)), prompt, p, 4)
    seq.num_computed_tokens = seq.num_tokens - 1
    return seq


def drafting(**cfg):
    return AdaptiveDrafting(SpeculativeConfig(**cfg), max_seq_len=1000)


def test_decoding_sequences_draft_k_tokens():
    a = drafting(num_tokens=4)
    seq = decoding()
    a.begin_step([seq])
    assert a.num_drafts(seq, budget=100) == 4


@pytest.mark.parametrize("params, why", [
    ({"speculative": False}, "opted out"),
    ({"repetition_penalty": 1.2}, "penalties"),
    ({"frequency_penalty": 0.5}, "penalties"),
    ({"min_tokens": 5}, "min_tokens not reached"),
    ({"stop": ["x"], "n": 2}, "stop strings: the cumulative logprob of a cut step is unknown"),
])
def test_requests_that_opt_out(params, why):
    seq = decoding(**params)
    assert not can_draft(seq), why


def test_prefilling_or_first_token_or_structured_sequences_do_not_draft():
    prefill = decoding()
    prefill.num_computed_tokens -= 2
    first = decoding(out=0)
    first.num_computed_tokens = 3
    structured = decoding()
    structured.grammar = object()
    assert not any(can_draft(s) for s in (prefill, first, structured))
    assert can_draft(decoding(min_tokens=2)) and can_draft(decoding(logprobs=2, n=2, stop=["x"]))


def test_never_past_max_tokens_the_sequence_limit_or_the_budget():
    a = AdaptiveDrafting(SpeculativeConfig(num_tokens=4), max_seq_len=10)
    near_max_tokens = decoding(max_tokens=4)  # 2 out: the step may keep 2 more, so 1 draft
    near_max_len = decoding(out=4)  # 8 tokens of 10: 1 draft
    at_limit = decoding(max_tokens=2)
    seqs = [near_max_tokens, near_max_len, at_limit]
    a.begin_step(seqs)
    assert [a.num_drafts(s, budget=100) for s in seqs] == [1, 1, 0]
    assert a.num_drafts(decoding(rid="b"), budget=3) == 2  # 1 + 2 tokens fill the budget


def test_a_large_batch_drafts_for_nobody():
    a = drafting(max_batch_size=2)
    seqs = [decoding(rid=str(i)) for i in range(3)]
    a.begin_step(seqs)
    assert a.num_drafts(seqs[0], 100) == 0
    prefilling = decoding(rid="p")
    prefilling.num_computed_tokens = 0  # only decoding sequences count
    a.begin_step([*seqs[:2], prefilling])
    assert a.num_drafts(seqs[0], 100) == 4


def test_low_acceptance_pauses_a_sequence_then_it_retries():
    a = drafting(num_tokens=4, min_acceptance=0.3, ema_weight=0.5, acceptance_init=0.6, backoff_steps=3)
    seq, other = decoding(), decoding(rid="o")
    a.begin_step([seq, other])
    assert a.num_drafts(seq, 100) == 4 and a.num_drafts(other, 100) == 4
    a.observe(seq, 4, 0)  # ema 0.3: still on
    a.observe(other, 4, 4)
    assert a.num_drafts(seq, 100) == 4
    a.observe(seq, 4, 0)  # ema 0.15: paused for three of its steps
    assert [a.num_drafts(seq, 100) for _ in range(4)] == [0, 0, 0, 4]
    assert a.num_drafts(other, 100) == 4  # the other keeps drafting
    a.observe(seq, 4, 1)  # the retry starts from acceptance_init: 0.425
    assert a.num_drafts(seq, 100) == 4


def test_state_is_kept_for_running_sequences_only():
    a = drafting(min_acceptance=0.5, ema_weight=1.0, backoff_steps=5)
    seq = decoding()
    a.begin_step([seq])
    a.num_drafts(seq, 100)
    a.observe(seq, 4, 0)
    assert a.num_drafts(seq, 100) == 0
    a.begin_step([])  # finished or preempted: forgotten
    a.begin_step([seq])
    assert a.num_drafts(seq, 100) == 4
