from workers.outputs import CompletionOutput, RequestOutput, TokenLogprob


def out(completions, finished=False, tokens=0):
    return RequestOutput("r", "p", [1, 2], completions, finished, tokens)


def test_merge_delta_folds_each_completion_by_index():
    a, b = TokenLogprob(5, -0.5, ((5, -0.5),)), TokenLogprob(6, -1.0, ((7, -0.2),))
    first = out([CompletionOutput(0, "he", [5], None, [a], -0.5), CompletionOutput(2, "x", [9], None, None, None)],
                tokens=2)
    later = out([CompletionOutput(1, "yo", [3, 4]), CompletionOutput(0, "y", [6], "stop", [b], -1.5)],
                finished=True, tokens=5)
    merged = first.merge_delta(later)
    assert merged.finished and merged.num_output_tokens == 5
    assert [c.index for c in merged.outputs] == [0, 1, 2]
    zero, one, two = merged.outputs
    assert (zero.text, zero.token_ids, zero.logprobs, zero.finish_reason) == ("hey", [5, 6], [a, b], "stop")
    assert zero.cumulative_logprob == -1.5  # a running sum: the later value, never added up
    assert (one.text, one.token_ids, one.logprobs) == ("yo", [3, 4], None)
    assert (two.text, two.finish_reason) == ("x", None)


def test_merge_delta_of_one_completion_stays_as_before():
    merged = out([CompletionOutput(0, "a", [1])]).merge_delta(out([CompletionOutput(0, "b", [2], "length")], True))
    assert merged.outputs == [CompletionOutput(0, "ab", [1, 2], "length")]
