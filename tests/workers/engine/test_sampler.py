from dataclasses import dataclass, field

import pytest
import torch

from workers.engine.sampler import Sampler, apply_penalties, argmax_rows, filtered_probs
from workers.sampling_params import SamplingParams


@dataclass
class Src:
    """What the sampler reads of a sequence."""

    request_id: str
    params: SamplingParams
    token_ids: list[int] = field(default_factory=lambda: [1, 2, 3])
    num_prompt_tokens: int = 3
    index: int = 0
    grammar: object = None  # a CompiledGrammar on structured rows


def sample(sampler, logits, params, request_ids):
    return sampler.sample(logits, [Src(r, p) for p, r in zip(params, request_ids)]).token_ids


def _logits(rows: int = 4, vocab: int = 50, seed: int = 0) -> torch.Tensor:
    return torch.randn(rows, vocab, generator=torch.Generator().manual_seed(seed))


def test_greedy_rows_are_the_exact_argmax_even_beside_sampled_rows():
    logits = _logits()
    params = [SamplingParams(temperature=0), SamplingParams(temperature=1.0, seed=1),
              SamplingParams(temperature=0), SamplingParams(temperature=0.7, top_k=5, seed=2)]
    tokens = sample(Sampler(seed=0), logits, params, ["a", "b", "c", "d"])
    assert tokens[0] == int(logits[0].argmax()) and tokens[2] == int(logits[2].argmax())


def test_same_seed_same_tokens_different_seed_different_tokens():
    logits = _logits(rows=1, vocab=1000)

    def draw(seed: int) -> list[int]:
        sampler = Sampler(seed=123)
        params = [SamplingParams(temperature=1.0, seed=seed)]
        return [sample(sampler, logits, params, ["r"])[0] for _ in range(20)]

    assert draw(7) == draw(7)
    assert draw(7) != draw(8)


def test_unseeded_requests_are_reproducible_from_the_engine_seed():
    logits = _logits(rows=2, vocab=1000)
    params = [SamplingParams(temperature=1.0)] * 2

    def run(engine_seed: int) -> list[int]:
        sampler = Sampler(seed=engine_seed)
        return [t for _ in range(10) for t in sample(sampler, logits, params, ["x", "y"])]

    assert run(5) == run(5)
    assert run(5) != run(6)


def test_release_restarts_a_requests_stream():
    logits = _logits(rows=1, vocab=1000)
    params = [SamplingParams(temperature=1.0, seed=3)]
    sampler = Sampler(seed=0)
    first = [sample(sampler, logits, params, ["r"])[0] for _ in range(5)]
    sampler.release("r")
    assert [sample(sampler, logits, params, ["r"])[0] for _ in range(5)] == first


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
    draws = [sample(sampler, logits, params, ["r"])[0] for _ in range(200)]
    assert 2 not in draws and 60 < draws.count(0) < 140


# ---- penalties, min_tokens, min_p, logprobs, parallel completions ------------------------------


def test_repetition_penalty_divides_positive_and_multiplies_negative_logits_of_seen_tokens():
    logits = torch.tensor([[2.0, -2.0, 2.0, -2.0, 1.0]])
    src = Src("r", SamplingParams(temperature=0, repetition_penalty=2.0), token_ids=[0, 1], num_prompt_tokens=1)
    apply_penalties(logits, [0], [src])  # token 0 in the prompt, token 1 in the output: both count
    assert logits.tolist() == [[1.0, -4.0, 2.0, -2.0, 1.0]]


def test_presence_and_frequency_penalties_count_output_tokens_only():
    logits = torch.zeros(1, 5)
    params = SamplingParams(temperature=0, presence_penalty=0.5, frequency_penalty=0.25)
    src = Src("r", params, token_ids=[4, 4, 1, 1, 1, 2], num_prompt_tokens=2)  # prompt: 4, 4
    apply_penalties(logits, [0], [src])
    # logit -= presence * [count > 0] + frequency * count: token 1 three times, token 2 once.
    assert logits.tolist() == [[0.0, -1.25, -0.75, 0.0, 0.0]]


def test_penalties_touch_only_their_rows_and_apply_to_greedy_rows():
    logits = _logits(rows=3, vocab=50)
    logits[:, 7] = 10.0  # token 7 would win every row
    before = logits.clone()
    history = [7] * 10
    plain = Src("a", SamplingParams(temperature=0), token_ids=history, num_prompt_tokens=2)
    penalised = Src("b", SamplingParams(temperature=0, frequency_penalty=2.0), token_ids=history,
                    num_prompt_tokens=2)
    out = Sampler(seed=0).sample(logits, [plain, penalised, plain])
    assert out.token_ids[0] == out.token_ids[2] == 7
    assert out.token_ids[1] != 7  # 10 - 2 * 8 < every other logit here
    assert torch.equal(logits[[0, 2]], before[[0, 2]])  # plain rows: untouched
    assert logits[1, 7] == 10.0 - 2.0 * 8 and out.logprobs is None


def test_min_tokens_masks_eos_and_stop_token_ids_until_reached():
    logits = torch.tensor([[0.0, 0.0, 5.0, 4.0, 3.0]])  # 2 is EOS, 3 a stop token: they would win
    params = SamplingParams(temperature=0, min_tokens=2, stop_token_ids=[3])
    sampler = Sampler(seed=0, eos_token_ids={2})
    early = Src("r", params, token_ids=[1, 1, 9], num_prompt_tokens=2)  # one output token so far
    assert sampler.sample(logits.clone(), [early]).token_ids == [4]
    done = Src("r", params, token_ids=[1, 1, 9, 9], num_prompt_tokens=2)  # two: the mask is off
    assert sampler.sample(logits.clone(), [done]).token_ids == [2]
    ignoring = Src("r", SamplingParams(temperature=0, min_tokens=2, ignore_eos=True), token_ids=[1, 1],
                   num_prompt_tokens=2)
    assert sampler.sample(logits.clone(), [ignoring]).token_ids == [2]  # EOS is no stop token then


def test_min_p_drops_tokens_below_a_share_of_the_best():
    probs_in = torch.tensor([[0.5, 0.3, 0.15, 0.05]])
    kept = filtered_probs(probs_in.log(), torch.tensor([1.0]), torch.tensor([0]), torch.tensor([1.0]),
                          torch.tensor([0.35]))  # floor: 0.35 * 0.5 = 0.175
    assert (kept[0] > 0).tolist() == [True, True, False, False]
    assert torch.allclose(kept[0, :2], torch.tensor([0.625, 0.375]))
    none_cut = filtered_probs(probs_in.log(), torch.tensor([1.0]), torch.tensor([0]), torch.tensor([1.0]),
                              torch.tensor([0.0]))
    assert torch.allclose(none_cut, probs_in)


def test_logprobs_are_of_the_raw_distribution_with_the_top_alternatives():
    logits = _logits(rows=2, vocab=30)
    raw = torch.log_softmax(logits, dim=1)
    params = [SamplingParams(temperature=0.3, top_k=3, seed=4, repetition_penalty=1.7, logprobs=3),
              SamplingParams(temperature=0, logprobs=0)]
    out = Sampler(seed=0).sample(logits, [Src("a", params[0]), Src("b", params[1])])
    for row, lp in enumerate(out.logprobs):
        assert lp.token_id == out.token_ids[row]
        assert lp.logprob == pytest.approx(float(raw[row, lp.token_id]), abs=1e-6)
    best = raw[0].topk(3)
    assert [t for t, _ in out.logprobs[0].top] == best.indices.tolist()
    assert [v for _, v in out.logprobs[0].top] == pytest.approx(best.values.tolist(), abs=1e-6)
    assert out.logprobs[1].top == ()


def test_only_rows_that_want_logprobs_get_them():
    out = Sampler(seed=0).sample(_logits(rows=2), [Src("a", SamplingParams(temperature=0)),
                                                  Src("b", SamplingParams(temperature=0, logprobs=2))])
    assert out.logprobs[0] is None and len(out.logprobs[1].top) == 2


def test_parallel_completions_draw_independently_and_reproducibly_from_one_row():
    logits = _logits(rows=1, vocab=1000).expand(4, -1).clone()
    params = SamplingParams(n=4, temperature=1.0, seed=21)

    def first_tokens(seed_stream: int) -> list[int]:
        return Sampler(seed=seed_stream).sample(logits.clone(), [Src("r", params)] * 4, [0, 1, 2, 3]).token_ids

    tokens = first_tokens(0)
    assert len(set(tokens)) > 1  # independent generators
    assert first_tokens(99) == tokens  # seeded: the engine's stream does not matter
    alone = Sampler(seed=0).sample(logits[:1].clone(), [Src("r", SamplingParams(temperature=1.0, seed=21))])
    assert alone.token_ids[0] == tokens[0]  # completion 0 draws what n = 1 draws
    # Later steps: child sequence 2 draws on from the stream its first token came from.
    sampler = Sampler(seed=0)
    sampler.sample(logits.clone(), [Src("r", params)] * 4, [0, 1, 2, 3])
    later = [sampler.sample(logits[:1].clone(), [Src("r", params, index=2)]).token_ids[0] for _ in range(5)]
    replay = Sampler(seed=0)
    replay.sample(logits[2:3].clone(), [Src("r", params, index=2)])  # the same first draw, alone
    assert [replay.sample(logits[:1].clone(), [Src("r", params, index=2)]).token_ids[0] for _ in range(5)] == later
    sampler.release("r")
    assert "r" not in sampler._generators


def test_argmax_rows_takes_the_argmax_of_greedy_rows_only():
    logits = torch.tensor([[0.0, 3.0, 1.0], [5.0, 0.0, 1.0], [0.0, 1.0, 2.0]])
    assert argmax_rows(logits, [0, 1, 2]) == [1, 0, 2]
    assert argmax_rows(logits, [0, 2]) == [1, 0, 2]  # row 1 samples: left 0 for the draw
    assert argmax_rows(logits, [1]) == [0, 0, 0]
    assert argmax_rows(logits, []) == [0, 0, 0]
