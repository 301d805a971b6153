import pytest

from workers.sampling_params import SamplingParams


@pytest.mark.parametrize("kwargs, field", [
    ({"max_tokens": 0}, "max_tokens"),
    ({"max_tokens": 1.5}, "max_tokens"),
    ({"max_tokens": True}, "max_tokens"),
    ({"temperature": -0.1}, "temperature"),
    ({"temperature": float("nan")}, "temperature"),
    ({"temperature": "hot"}, "temperature"),
    ({"top_p": 0}, "top_p"),
    ({"top_p": 1.01}, "top_p"),
    ({"top_k": -2}, "top_k"),
    ({"seed": "x"}, "seed"),
    ({"stop": [""]}, "stop"),
    ({"stop": [1]}, "stop"),
    ({"stop_token_ids": [-1]}, "stop_token_ids"),
    ({"stop_token_ids": ["a"]}, "stop_token_ids"),
    ({"n": 0}, "n"),
    ({"n": 17}, "n"),
    ({"n": 2.0}, "n"),
    ({"min_tokens": -1}, "min_tokens"),
    ({"min_tokens": 17, "max_tokens": 16}, "min_tokens"),
    ({"min_p": -0.1}, "min_p"),
    ({"min_p": 1.5}, "min_p"),
    ({"repetition_penalty": 0}, "repetition_penalty"),
    ({"repetition_penalty": float("inf")}, "repetition_penalty"),
    ({"presence_penalty": 2.5}, "presence_penalty"),
    ({"presence_penalty": float("nan")}, "presence_penalty"),
    ({"frequency_penalty": -2.1}, "frequency_penalty"),
    ({"logprobs": -1}, "logprobs"),
    ({"logprobs": 21}, "logprobs"),
    ({"logprobs": True}, "logprobs"),
    ({"skip_special_tokens": "yes"}, "skip_special_tokens"),
    ({"include_stop_str_in_output": 1}, "include_stop_str_in_output"),
    ({"ignore_eos": None}, "ignore_eos"),
])
def test_bad_values_raise_naming_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        SamplingParams(**kwargs)


def test_defaults_and_conveniences():
    p = SamplingParams(stop="END", temperature=0)
    assert p.stop == ["END"] and p.greedy
    assert not SamplingParams().greedy
    assert SamplingParams(top_k=-1, top_p=1, seed=3).seed == 3


def test_new_fields_default_to_plain_sampling():
    p = SamplingParams()
    assert (p.n, p.min_tokens, p.min_p, p.logprobs) == (1, 0, 0.0, None)
    assert (p.repetition_penalty, p.presence_penalty, p.frequency_penalty) == (1.0, 0.0, 0.0)
    assert p.skip_special_tokens and not p.include_stop_str_in_output
    assert not p.has_penalties and not p.wants_logprob


def test_range_edges_are_accepted():
    p = SamplingParams(n=16, max_tokens=5, min_tokens=5, min_p=1, repetition_penalty=0.01, presence_penalty=-2,
                       frequency_penalty=2, logprobs=20)
    assert p.has_penalties and p.wants_logprob
    assert SamplingParams(logprobs=0).wants_logprob  # the sampled token's logprob alone
    assert SamplingParams(n=2).wants_logprob  # cumulative_logprob ranks the completions (best_of)
