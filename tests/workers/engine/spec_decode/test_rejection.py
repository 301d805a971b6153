"""The verification arithmetic on synthetic distributions: greedy is exact, sampling keeps the target's
distribution (chi-square tests on a 6-token vocabulary, fixed seeds, bounded samples)."""
import torch
from scipy.stats import chisquare

from workers.engine.spec_decode.rejection import greedy_verify, inverse_cdf, rejection_sample

SAMPLES = 40_000
ALPHA = 1e-3  # a correct implementation fails a test at most this often; the seeds are fixed anyway


def _logits(rows):
    """[R, K + 1, V] from per-position argmax tokens."""
    out = torch.zeros(len(rows), len(rows[0]), 6)
    for r, best in enumerate(rows):
        for i, t in enumerate(best):
            out[r, i, t] = 5.0
    return out


def test_greedy_keeps_the_matching_run_and_the_target_token_after_it():
    logits = _logits([[1, 2, 3], [1, 2, 3], [1, 2, 3], [4, 0, 0]])
    drafts = torch.tensor([[1, 2], [1, 5], [0, 2], [4, 4]])
    accepted, final = greedy_verify(logits, drafts, torch.tensor([2, 2, 2, 0]))
    # all accepted -> bonus; first accepted -> correction at 1; none -> correction at 0; no drafts -> plain
    assert accepted.tolist() == [2, 1, 0, 0]
    assert final.tolist() == [3, 2, 1, 4]


def test_greedy_ignores_padding_past_a_rows_drafts():
    logits = _logits([[1, 2, 3]])
    accepted, final = greedy_verify(logits, torch.tensor([[1, 2]]), torch.tensor([1]))
    assert (accepted.item(), final.item()) == (1, 2)  # d_2 matches, but the row drafted one token


def test_inverse_cdf_never_picks_a_zero_weight_token():
    w = torch.tensor([[0.0, 0.5, 0.0, 0.5, 0.0]] * 4)
    u = torch.tensor([0.0, 0.4999, 0.5, 1.0 - 2 ** -24])
    assert inverse_cdf(w, u).tolist() == [1, 1, 3, 3]


def _draw(p, drafts, q, gen):
    """Rejection-sample SAMPLES rows of the same problem; returns (accepted [S], final [S])."""
    n, width = SAMPLES, drafts.shape[1]
    target = p.expand(n, *p.shape)
    uniforms = torch.rand(n, width + 1, generator=gen)
    return rejection_sample(target, drafts, torch.full((n,), width), q, uniforms)


def _assert_distributed_as(tokens, p):
    counts = torch.bincount(tokens, minlength=p.numel()).double()
    expected = p.double() / p.double().sum() * tokens.numel()
    keep = expected > 0
    assert counts[~keep].sum() == 0, f"tokens of zero probability drawn: {counts.tolist()}"
    stat = chisquare(counts[keep].numpy(), expected[keep].numpy())
    assert stat.pvalue > ALPHA, f"counts {counts.tolist()} vs expected {expected.tolist()}: p={stat.pvalue:.2e}"


def _first_token(accepted, final, drafts):
    return torch.where(accepted > 0, drafts[:, 0], final)


def test_a_deterministic_proposer_keeps_the_target_distribution():
    gen = torch.Generator().manual_seed(0)
    p = torch.tensor([[0.35, 0.25, 0.2, 0.1, 0.1, 0.0],
                      [0.05, 0.4, 0.3, 0.15, 0.1, 0.0],
                      [0.2, 0.2, 0.2, 0.2, 0.2, 0.0]])
    # Drafts: a likely token, then an unlikely one; q is one-hot at each.
    drafts = torch.tensor([[1, 3]]).expand(SAMPLES, 2)
    accepted, final = _draw(p, drafts, None, gen)
    first = _first_token(accepted, final, drafts)
    _assert_distributed_as(first, p[0])
    assert abs((accepted > 0).double().mean().item() - 0.25) < 0.02  # d_1 is accepted with probability p_0(d_1)
    # Given d_1 was accepted, the next kept token follows p_1 (a rejected d_1 is never drawn again: q one-hot).
    second = torch.where(accepted > 1, drafts[:, 1], final)[accepted > 0]
    _assert_distributed_as(second, p[1])


def test_a_sampled_draft_keeps_the_target_distribution():
    gen = torch.Generator().manual_seed(1)
    p = torch.tensor([[0.5, 0.2, 0.1, 0.1, 0.1, 0.0],
                      [0.1, 0.1, 0.2, 0.3, 0.3, 0.0]])
    q = torch.tensor([[0.1, 0.1, 0.2, 0.2, 0.2, 0.2]])  # wrong, and puts mass where p has none
    drafts = torch.multinomial(q[0], SAMPLES, replacement=True, generator=gen).unsqueeze(1)
    accepted, final = _draw(p, drafts, q.expand(SAMPLES, 1, 6), gen)
    _assert_distributed_as(_first_token(accepted, final, drafts), p[0])
    # Acceptance is sum_x min(p(x), q(x)) for one draft.
    expected = torch.minimum(p[0], q[0]).sum().item()
    assert abs((accepted > 0).double().mean().item() - expected) < 0.02
    _assert_distributed_as(final[accepted > 0], p[1])  # the bonus token after an accepted draft


def test_a_perfect_draft_is_always_accepted():
    gen = torch.Generator().manual_seed(2)
    p = torch.tensor([[0.3, 0.7, 0, 0, 0, 0], [0.6, 0.4, 0, 0, 0, 0]])
    drafts = torch.multinomial(p[0], SAMPLES, replacement=True, generator=gen).unsqueeze(1)
    accepted, final = _draw(p, drafts, p[:1].expand(SAMPLES, 1, 6), gen)
    assert bool((accepted == 1).all())
    _assert_distributed_as(final, p[1])
