"""The engine glue (validation, outputs, stop handling, aborts, leaks) over the fake runner."""
import pytest
from prometheus_client import CollectorRegistry

from tests.workers.engine.fakes import EOS, FakeRunner, fake_config
from workers.engine.llm_engine import LLMEngine
from workers.sampling_params import SamplingParams

GREEDY = SamplingParams(max_tokens=6, temperature=0)


def engine(runner_kw=None, registry=None, **cfg):
    config = fake_config(**cfg)
    return LLMEngine(config, FakeRunner(config, **(runner_kw or {})), registry=registry or CollectorRegistry())


def drain(eng):
    finals = {}
    while eng.has_unfinished_requests():
        for o in eng.step():
            if o.finished:
                finals[o.request_id] = o
    return finals


def assert_no_leaks(eng):
    bm = eng.block_manager
    assert bm.num_free_blocks == bm.num_blocks and all(b.ref_count == 0 for b in bm.blocks)


@pytest.mark.parametrize("kwargs, field", [
    ({"prompt": ""}, "prompt"),
    ({"prompt": []}, "prompt"),
    ({"prompt": [1, 999]}, "prompt"),
    ({"prompt": None}, "prompt"),
    ({"prompt": "x", "messages": [{"role": "user", "content": "y"}]}, "prompt"),
    ({"messages": []}, "messages"),
    ({"messages": [{"content": "no role"}]}, "messages"),
    ({"messages": [{"role": "user"}]}, "messages"),
    ({"messages": ["not a dict"]}, "messages"),
    ({"messages": [{"role": "wizard", "content": "x"}]}, "messages"),
    ({"prompt": "x" * 600}, "prompt"),  # longer than max_model_len (512)
    ({"prompt": "x", "params": "greedy"}, "params"),
])
def test_bad_requests_raise_naming_the_field_and_others_keep_going(kwargs, field):
    eng = engine()
    eng.add_request("good", "fine prompt", params=GREEDY)
    eng.step()
    with pytest.raises(ValueError, match=field):
        eng.add_request("bad", **kwargs)
    finals = drain(eng)
    assert list(finals) == ["good"] and finals["good"].outputs[0].finish_reason == "length"
    assert_no_leaks(eng)


def test_prompt_larger_than_the_whole_kv_cache_is_refused():
    eng = engine(num_kv_blocks=4)  # 16 tokens in all
    with pytest.raises(ValueError, match=r"prompt.*KV cache"):
        eng.add_request("big", "x" * 17, params=GREEDY)
    eng.add_request("fits", "x" * 16, params=SamplingParams(max_tokens=50, temperature=0))
    out = drain(eng)["fits"]
    assert out.outputs[0].finish_reason == "length"  # capped by the pool, never deadlocked


def test_duplicate_request_id_is_refused_but_reusable_after_finish():
    eng = engine()
    eng.add_request("x", "abc", params=GREEDY)
    with pytest.raises(ValueError, match="request_id"):
        eng.add_request("x", "abc", params=GREEDY)
    drain(eng)
    eng.add_request("x", "abc", params=GREEDY)
    assert drain(eng)["x"].finished


def test_abort_frees_blocks_at_once_and_releases_the_runner_state():
    eng = engine()
    eng.add_request("a", "some prompt text", params=SamplingParams(max_tokens=50, temperature=0))
    eng.add_request("b", "another prompt", params=GREEDY)
    eng.step()
    eng.step()
    used = eng.block_manager.num_used_blocks
    final = eng.abort("a")
    assert final.finished and final.outputs[0].finish_reason == "abort"
    assert eng.block_manager.num_used_blocks < used
    assert "a" in eng.runner.released
    assert eng.abort("a") is None
    drain(eng)
    assert_no_leaks(eng)
    assert sorted(eng.runner.released) == ["a", "b"]


def test_stop_string_ends_the_request_with_truncated_text():
    eng = engine(runner_kw={"reply": b"Hello world. Bye"})
    eng.add_request("s", "q", params=SamplingParams(max_tokens=40, temperature=0, stop=["."]))
    out = drain(eng)["s"]
    assert out.outputs[0].text == "Hello world" and out.outputs[0].finish_reason == "stop"
    assert out.outputs[0].token_ids == list(b"Hello world.")
    assert_no_leaks(eng)


def test_eos_is_not_in_the_text_but_in_the_token_ids():
    eng = engine(runner_kw={"reply": b"done"})
    eng.add_request("e", "q", params=SamplingParams(max_tokens=40, temperature=0))
    out = drain(eng)["e"]
    assert out.outputs[0].text == "done" and out.outputs[0].token_ids[-1] == EOS
    assert out.outputs[0].finish_reason == "stop"


def test_utf8_split_across_tokens_in_outputs():
    eng = engine(runner_kw={"reply": "naïve café 😀".encode()})
    eng.add_request("u", "q", params=SamplingParams(max_tokens=40, temperature=0))
    texts = []
    while eng.has_unfinished_requests():
        texts += [o.outputs[0].text for o in eng.step()]
    assert all("\ufffd" not in t for t in texts)
    assert texts[-1] == "naïve café 😀"


def test_no_leaks_after_a_mix_of_finished_aborted_and_preempted_requests():
    eng = engine(num_kv_blocks=10, max_num_batched_tokens=16)
    for i in range(8):
        eng.add_request(f"r{i}", f"prompt number {i}", params=SamplingParams(max_tokens=10 + i, temperature=0))
    preempted = 0
    for step in range(400):
        if not eng.has_unfinished_requests():
            break
        eng.step()
        preempted += len(eng.runner.steps[-1].preempted) if eng.runner.steps else 0
        if step == 5:
            eng.abort("r3")
        if step == 9:
            eng.abort("r6")
    assert not eng.has_unfinished_requests()
    assert preempted > 0
    assert_no_leaks(eng)


@pytest.mark.parametrize("seed", range(4))
def test_randomised_mix_with_shared_prefixes_preemption_and_aborts(seed):
    """Shared prefixes + a tight pool + chunking + aborts: the fake runner checks every KV slot it
    reads, surviving outputs match an unconstrained run, and the pool ends empty."""
    import random

    rng = random.Random(seed)
    stems = ["system prompt alpha: ", "another shared stem, longer: "]
    requests = [(f"r{i}", rng.choice(stems) + "q" * rng.randint(0, 9) + str(i), rng.randint(1, 20))
                for i in range(14)]
    to_abort = set(rng.sample([r[0] for r in requests], 3))

    def run(num_blocks, budget, aborts):
        eng = engine(num_kv_blocks=num_blocks, max_num_batched_tokens=budget, max_num_seqs=6)
        pending = list(requests)
        finals, step = {}, 0
        while pending or eng.has_unfinished_requests():
            if pending and rng.random() < 0.5:
                rid, prompt, n = pending.pop(0)
                eng.add_request(rid, prompt, params=SamplingParams(max_tokens=n, temperature=0))
            finals.update((o.request_id, o) for o in eng.step() if o.finished)
            step += 1
            if aborts and step % 7 == 0:
                for rid in list(aborts):
                    if rid in eng.scheduler:
                        finals[rid] = eng.abort(rid)
                        aborts.discard(rid)
                        break
        assert_no_leaks(eng)
        return finals, eng

    reference, _ = run(400, 256, set())
    tight, eng = run(16, 12, set(to_abort))
    assert any(s.preempted for s in eng.runner.steps)
    assert eng.block_manager.stats.hits > 0
    for rid, out in tight.items():
        ref = reference[rid].outputs[0]
        if out.outputs[0].finish_reason == "abort":
            assert ref.token_ids[:len(out.outputs[0].token_ids)] == out.outputs[0].token_ids
        else:
            assert out.outputs[0].token_ids == ref.token_ids and out.outputs[0].text == ref.text


def _cached_tokens(eng, rid, salt, messages):
    eng.add_request(rid, messages=messages, params=GREEDY, cache_salt=salt)
    return drain(eng)[rid].num_cached_tokens


def test_salted_requests_share_only_the_declared_public_prefix():
    system = [{"role": "system", "content": "You answer briefly and politely, always."}]
    convo = [*system, {"role": "user", "content": "What is the tallest mountain on Earth?"}]
    eng = engine(shared_prefixes=[system])
    public = len(eng.input_processor.public_prefixes[0]) // 4 * 4  # whole public blocks
    assert public > 0
    assert _cached_tokens(eng, "a1", "salt-a", convo) == 0
    assert _cached_tokens(eng, "b1", "salt-b", convo) == public  # the system prompt, nothing after it
    assert _cached_tokens(eng, "a2", "salt-a", convo) > public  # a's own question too
    assert_no_leaks(eng)


# ---- n completions, logprobs, min_tokens --------------------------------------------------------

PROMPT = "a prompt of 23 bytes..."  # 23 tokens: the last prompt block (of 4) is partial, so forks copy it


def finals_of(eng, requests):
    for rid, prompt, params in requests:
        eng.add_request(rid, prompt, params=params)
    return drain(eng)


def test_n_completions_share_one_prefill_and_sample_independently():
    eng = engine()
    out = finals_of(eng, [("r", PROMPT, SamplingParams(n=3, max_tokens=8, temperature=0.8, seed=5))])["r"]
    assert [c.index for c in out.outputs] == [0, 1, 2]
    assert all(c.finish_reason == "length" and len(c.token_ids) == 8 for c in out.outputs)
    assert all(c.text == bytes(c.token_ids).decode() for c in out.outputs)
    assert len({tuple(c.token_ids) for c in out.outputs}) == 3
    # The prompt was computed once: one step held all its tokens, and usage counts it once.
    prompt_steps = [s for s in eng.runner.steps if any(x.num_new_tokens > 1 for x in s.scheduled)]
    assert len(prompt_steps) == 1 and prompt_steps[0].num_batched_tokens == 23
    assert out.num_prompt_tokens == 23 and out.num_output_tokens == 24
    assert len(eng.runner.copies) == 2  # the shared partial block: copied for all writers but the last
    assert eng.runner.released == ["r"]
    assert_no_leaks(eng)


def test_seeded_completions_are_reproducible_and_completion_0_is_the_n_1_sample():
    params = SamplingParams(n=3, max_tokens=6, temperature=0.8, seed=11)
    first = finals_of(engine(), [("a", PROMPT, params)])["a"]
    again = finals_of(engine(), [("b", "other first", SamplingParams(max_tokens=3)), ("a", PROMPT, params)])["a"]
    single = finals_of(engine(), [("s", PROMPT, SamplingParams(max_tokens=6, temperature=0.8, seed=11))])["s"]
    assert [c.token_ids for c in first.outputs] == [c.token_ids for c in again.outputs]
    assert first.outputs[0].token_ids == single.outputs[0].token_ids


def test_greedy_children_are_identical_to_the_n_1_output():
    eng = engine()
    finals = finals_of(eng, [("two", PROMPT, SamplingParams(n=2, max_tokens=9, temperature=0)),
                             ("one", PROMPT + "!", SamplingParams(max_tokens=3, temperature=0))])
    single = finals_of(eng, [("single", PROMPT, SamplingParams(max_tokens=9, temperature=0))])["single"]
    two = finals["two"].outputs
    assert two[0].token_ids == two[1].token_ids == single.outputs[0].token_ids
    assert two[0].text == two[1].text == single.outputs[0].text
    assert_no_leaks(eng)


def test_completions_finish_on_their_own_and_the_request_when_all_have():
    eng = engine()
    eng.add_request("r", PROMPT, params=SamplingParams(n=4, max_tokens=30, temperature=1.0, seed=3, stop=["a", "b"]))
    outputs = []
    while eng.has_unfinished_requests():
        outputs += eng.step()
    final = outputs[-1]
    assert final.finished and not any(o.finished for o in outputs[:-1])
    lengths = {len(c.token_ids) for c in final.outputs}
    assert len(lengths) > 1  # different stop points
    for c in final.outputs:
        assert c.finish_reason in ("stop", "length")
        if c.finish_reason == "stop":
            assert chr(c.token_ids[-1]) in "ab" and c.text == bytes(c.token_ids[:-1]).decode()
    assert final.num_output_tokens == sum(len(c.token_ids) for c in final.outputs)
    assert_no_leaks(eng)


def test_n_with_max_tokens_1_finishes_every_completion_at_the_fork():
    eng = engine()
    out = finals_of(eng, [("r", PROMPT, SamplingParams(n=5, max_tokens=1, temperature=1.0, seed=1))])["r"]
    assert [len(c.token_ids) for c in out.outputs] == [1] * 5 and out.num_output_tokens == 5
    assert_no_leaks(eng)


@pytest.mark.parametrize("when", ["prefill", "decode"])
def test_aborting_an_n_request_frees_every_block(when):
    eng = engine(max_num_batched_tokens=8)  # the prompt takes three chunks
    eng.add_request("r", PROMPT, params=SamplingParams(n=3, max_tokens=50, temperature=0.8, seed=2))
    eng.add_request("other", "x", params=SamplingParams(max_tokens=50, temperature=0))
    for _ in range(1 if when == "prefill" else 6):
        eng.step()
    assert eng.block_manager.num_used_blocks > 0
    final = eng.abort("r")
    assert final.finished and [c.index for c in final.outputs] == [0, 1, 2]
    assert all(c.finish_reason == "abort" for c in final.outputs)
    if when == "decode":
        assert all(c.token_ids for c in final.outputs)
    eng.abort("other")
    assert_no_leaks(eng)
    assert not eng.has_unfinished_requests()


def test_n_requests_under_preemption_match_an_unconstrained_run():
    requests = [(f"r{i}", f"request {i} with a prompt", SamplingParams(n=1 + i % 3, max_tokens=10 + i,
                                                                         temperature=0.7 * (i % 2), seed=i))
                for i in range(6)]
    big = finals_of(engine(num_kv_blocks=400), requests)
    tight_eng = engine(num_kv_blocks=24, max_num_batched_tokens=16)
    tight = finals_of(tight_eng, requests)
    assert any(s.preempted for s in tight_eng.runner.steps) and tight_eng.runner.copies
    for rid, out in big.items():
        assert [c.token_ids for c in tight[rid].outputs] == [c.token_ids for c in out.outputs]
    assert_no_leaks(tight_eng)


def test_a_parent_yet_to_fork_holds_batch_slots_for_all_its_completions():
    eng = engine(max_num_seqs=4)
    finals = finals_of(eng, [("n3", PROMPT, SamplingParams(n=3, max_tokens=5, temperature=0)),
                             *((f"s{i}", f"short {i}", SamplingParams(max_tokens=5, temperature=0)) for i in range(3))])
    assert max(eng.runner.batch_seqs) <= 4 and len(finals) == 4
    with pytest.raises(ValueError, match=r"n .* max_num_seqs"):
        eng.add_request("too-many", "x", params=SamplingParams(n=5))


def test_logprobs_ride_with_their_tokens_and_sum_to_the_cumulative_logprob():
    eng = engine()
    finals = finals_of(eng, [("lp", PROMPT, SamplingParams(n=2, max_tokens=5, temperature=1.0, seed=1, logprobs=2)),
                             ("plain", PROMPT, SamplingParams(max_tokens=5, temperature=0)),
                             ("ranked", PROMPT, SamplingParams(n=2, max_tokens=5, temperature=0))])
    for c in finals["lp"].outputs:
        assert [lp.token_id for lp in c.logprobs] == c.token_ids
        assert all(len(lp.top) == 2 for lp in c.logprobs)
        assert c.cumulative_logprob == pytest.approx(sum(lp.logprob for lp in c.logprobs))
    plain = finals["plain"].outputs[0]
    assert plain.logprobs is None and plain.cumulative_logprob is None
    ranked = finals["ranked"].outputs  # n > 1 without logprobs: the sums only, for best_of
    assert all(c.logprobs is None and c.cumulative_logprob < 0 for c in ranked)


def test_min_tokens_holds_eos_and_stop_strings_off():
    eng = engine(runner_kw={"reply": b"a.b"})  # then <eos>
    finals = finals_of(eng, [("m", "q", SamplingParams(max_tokens=40, temperature=0, min_tokens=6, stop=["."])),
                             ("s", "q", SamplingParams(max_tokens=40, temperature=0, stop=["."]))])
    held = finals["m"].outputs[0]
    assert len(held.token_ids) >= 6 and EOS not in held.token_ids[:6]
    assert held.text.startswith("a.b")  # the "." came within min_tokens: not a stop
    assert finals["s"].outputs[0].text == "a"


def test_include_stop_str_in_output_and_skip_special_tokens():
    eng = engine(runner_kw={"reply": b"Hello. Bye"})
    finals = finals_of(eng, [
        ("inc", "q", SamplingParams(max_tokens=40, temperature=0, stop=["."], include_stop_str_in_output=True)),
        ("eos", "q", SamplingParams(max_tokens=40, temperature=0, skip_special_tokens=False,
                                    include_stop_str_in_output=True))])
    assert finals["inc"].outputs[0].text == "Hello."
    assert finals["eos"].outputs[0].text == "Hello. Bye<eos>"  # the stop token's text, shown and kept
