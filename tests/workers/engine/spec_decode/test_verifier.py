"""The runner's verification glue on synthetic logits: greedy, sampled, logprobs, rows of different k."""
import torch

from workers.engine.sampler import Sampler
from workers.engine.scheduler_output import ScheduledSequence
from workers.engine.sequence import Sequence
from workers.engine.spec_decode.verifier import Verifier
from workers.sampling_params import SamplingParams

V = 8


def row(rid, drafts, **params):
    seq = Sequence(rid, [1, 2, 3], 2, SamplingParams(**{"max_tokens": 50, **params}), 4)
    seq.num_computed_tokens = 2
    return ScheduledSequence(seq, 1 + len(drafts), num_draft_tokens=len(drafts), draft_token_ids=list(drafts))


def peaked(best):
    """[len(best), V] logits with a clear argmax at each position."""
    logits = torch.randn(len(best), V, generator=torch.Generator().manual_seed(len(best))) * 0.1
    logits[torch.arange(len(best)), torch.tensor(best)] = 6.0
    return logits


def test_greedy_rows_of_different_lengths_keep_the_argmax_run():
    rows = [row("a", [4, 5, 6], temperature=0), row("b", [7], temperature=0), row("c", [4, 4], temperature=0)]
    logits = torch.cat([peaked([4, 5, 0, 1]), peaked([7, 2]), peaked([3, 4, 4])])
    tokens, logprobs = Verifier(Sampler(0)).verify(logits, rows, [0, 4, 6], [None] * 3)
    assert tokens == [[4, 5, 0], [7, 2], [3]]
    assert logprobs == [None, None, None]


def test_logprobs_are_the_raw_models_at_each_kept_position():
    rows = [row("a", [4, 5], temperature=0, logprobs=2)]
    logits = peaked([4, 1, 2])
    [tokens], [lps] = Verifier(Sampler(0)).verify(logits, rows, [0], [None])
    raw = torch.log_softmax(logits, dim=1)
    assert tokens == [4, 1]
    assert [lp.token_id for lp in lps] == [4, 1]
    assert [lp.logprob for lp in lps] == [raw[0, 4].item(), raw[1, 1].item()]
    assert all(len(lp.top) == 2 and lp.top[0][0] == lp.token_id for lp in lps)


def test_sampled_rows_follow_their_seed_and_a_sure_draft_is_kept():
    def run():
        rows = [row("s", [4, 5], temperature=0.7, seed=11), row("t", [2], temperature=1.0, top_k=3, seed=5)]
        logits = torch.cat([peaked([4, 5, 6]) * 10, torch.randn(2, V, generator=torch.Generator().manual_seed(9))])
        return Verifier(Sampler(0)).verify(logits, rows, [0, 3], [None, None])[0]

    first = run()
    assert first == run()  # seeded: reproducible
    assert first[0] == [4, 5, 6]  # near-certain drafts are accepted, then the target's own token
    assert 1 <= len(first[1]) <= 2


def test_a_draft_models_q_is_used_where_given():
    # q puts all mass on the draft while p gives it none: always rejected, and the residual is p itself.
    rows = [row("q", [3], temperature=1.0, seed=1)]
    logits = torch.full((2, V), -30.0)
    logits[0, 6] = 0.0  # p_0 is one-hot at 6
    q = torch.zeros(1, V)
    q[0, 3] = 1.0
    [tokens], _ = Verifier(Sampler(0)).verify(logits, rows, [0], [q])
    assert tokens == [6]
