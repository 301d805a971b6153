import torch

from workers.engine.sampler import Sampler, filtered_probs
from workers.sampling_params import SamplingParams


def _logits(rows: int = 4, vocab: int = 50, seed: int = 0) -> torch.Tensor:
    return torch.randn(rows, vocab, generator=torch.Generator().manual_seed(seed))


def test_greedy_rows_are_the_exact_argmax_even_beside_sampled_rows():
    logits = _logits()
    params = [SamplingParams(temperature=0), SamplingParams(temperature=1.0, seed=1),
              SamplingParams(temperature=0), SamplingParams(temperature=0.7, top_k=5, seed=2)]
    tokens = Sampler(seed=0).sample(logits, params, ["a", "b", "c", "d"])
    assert tokens[0] == int(logits[0].argmax()) and tokens[2] == int(logits[2].argmax())


def test_same_seed_same_tokens_different_seed_different_tokens():
    logits = _logits(rows=1, vocab=1000)

    def draw(seed: int) -> list[int]:
        sampler = Sampler(seed=123)
        params = [SamplingParams(temperature=1.0, seed=seed)]
        return [sampler.sample(logits, params, ["r"])[0] for _ in range(20)]

    assert draw(7) == draw(7)
    assert draw(7) != draw(8)


def test_unseeded_requests_are_reproducible_from_the_engine_seed():
    logits = _logits(rows=2, vocab=1000)
    params = [SamplingParams(temperature=1.0)] * 2

    def run(engine_seed: int) -> list[int]:
        sampler = Sampler(seed=engine_seed)
        return [t for _ in range(10) for t in sampler.sample(logits, params, ["x", "y"])]

    assert run(5) == run(5)
    assert run(5) != run(6)


def test_release_restarts_a_requests_stream():
    logits = _logits(rows=1, vocab=1000)
    params = [SamplingParams(temperature=1.0, seed=3)]
    sampler = Sampler(seed=0)
    first = [sampler.sample(logits, params, ["r"])[0] for _ in range(5)]
    sampler.release("r")
    assert [sampler.sample(logits, params, ["r"])[0] for _ in range(5)] == first


def test_top_k_keeps_only_the_k_best():
    logits = torch.tensor([[1.0, 5.0, 3.0, 4.0, 2.0]])
    probs = filtered_probs(logits, torch.tensor([1.0]), torch.tensor([2]), torch.tensor([1.0]))
    assert (probs[0] > 0).tolist() == [False, True, False, True, False]
    assert torch.isclose(probs.sum(), torch.tensor(1.0))


def test_top_p_keeps_the_smallest_prefix_reaching_p():
    probs_in = torch.tensor([[0.5, 0.3, 0.15, 0.05]])
    logits = probs_in.log()
    kept = filtered_probs(logits, torch.tensor([1.0]), torch.tensor([0]), torch.tensor([0.8]))
    assert (kept[0] > 0).tolist() == [True, True, False, False]
    # The top token always survives, however small p is.
    kept = filtered_probs(logits, torch.tensor([1.0]), torch.tensor([0]), torch.tensor([0.01]))
    assert (kept[0] > 0).tolist() == [True, False, False, False]


def test_per_row_settings_are_independent():
    logits = torch.zeros(2, 10)
    probs = filtered_probs(logits, torch.tensor([1.0, 1.0]), torch.tensor([3, 0]), torch.tensor([1.0, 1.0]))
    assert int((probs[0] > 0).sum()) >= 3 and int((probs[1] > 0).sum()) == 10


def test_low_temperature_concentrates_on_the_best_token():
    logits = torch.tensor([[1.0, 2.0, 3.0]])
    cold = filtered_probs(logits, torch.tensor([0.05]), torch.tensor([0]), torch.tensor([1.0]))
    assert cold[0, 2] > 0.999


def test_sampled_tokens_follow_the_distribution():
    logits = torch.tensor([[0.0, 0.0, -50.0]])
    sampler = Sampler(seed=0)
    params = [SamplingParams(temperature=1.0, seed=9)]
    draws = [sampler.sample(logits, params, ["r"])[0] for _ in range(200)]
    assert 2 not in draws and 60 < draws.count(0) < 140
