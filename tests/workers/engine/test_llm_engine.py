"""The engine glue and the offline LLM API, over the fake runner."""
import pytest
from prometheus_client import CollectorRegistry, generate_latest

from tests.workers.engine.fakes import EOS, FakeRunner, fake_config
from workers import LLM, SamplingParams
from workers.engine.llm_engine import LLMEngine

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


def make_llm(**cfg):
    config = fake_config(**cfg)
    return LLM("fake", runner=FakeRunner(config), **{k: v for k, v in vars_of(config).items() if k != "model"})


def vars_of(config):
    return {f: getattr(config, f) for f in config.__slots__}


def test_generate_returns_outputs_in_input_order_with_text_and_ids():
    llm = make_llm()
    outs = llm.generate(["first prompt", [104, 105], "third"], GREEDY)
    assert [o.prompt for o in outs] == ["first prompt", None, "third"]
    assert outs[1].prompt_token_ids == [104, 105] and outs[1].num_prompt_tokens == 2
    for o in outs:
        c = o.outputs[0]
        assert o.finished and c.finish_reason == "length" and len(c.token_ids) == 6
        assert c.text == bytes(c.token_ids).decode()
    assert_no_leaks(llm.engine)


def test_generate_single_prompt_and_params_list():
    llm = make_llm()
    assert len(llm.generate("one", GREEDY)) == 1
    outs = llm.generate(["a", "b"], [SamplingParams(max_tokens=2, temperature=0), SamplingParams(max_tokens=3)])
    assert [len(o.outputs[0].token_ids) for o in outs] == [2, 3]
    with pytest.raises(ValueError, match="params"):
        llm.generate(["a", "b"], [GREEDY])


def test_chat_uses_the_template_and_accepts_one_or_many_conversations():
    llm = make_llm()
    conv = [{"role": "user", "content": "hi"}]
    one = llm.chat(conv, GREEDY)
    two = llm.chat([conv, [{"role": "system", "content": "s"}, *conv]], GREEDY)
    assert len(one) == 1 and len(two) == 2
    assert one[0].prompt_token_ids == list(b"<user>hi\n<assistant>")
    assert one[0].outputs[0].token_ids == two[0].outputs[0].token_ids


def test_same_output_with_or_without_prefix_cache_and_cached_tokens_reported():
    llm = make_llm()
    prompt = "a shared system prompt of some length"  # 37 bytes: 9 full blocks of 4
    first, second = llm.generate([prompt], GREEDY)[0], llm.generate([prompt], GREEDY)[0]
    assert first.num_cached_tokens == 0 and second.num_cached_tokens == 36
    assert second.outputs[0].token_ids == first.outputs[0].token_ids
    assert llm.engine.block_manager.stats.hits == 9


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
    with pytest.raises(ValueError, match="prompt.*KV cache"):
        eng.add_request("big", "x" * 17, params=GREEDY)
    eng.add_request("fits", "x" * 16, params=SamplingParams(max_tokens=50, temperature=0))
    out = drain(eng)["fits"]
    assert out.outputs[0].finish_reason == "length"  # capped by the pool, never deadlocked


def test_sampling_params_validation():
    for bad in (dict(max_tokens=0), dict(temperature=-1), dict(top_p=0), dict(top_p=1.5)):
        field = next(iter(bad))
        with pytest.raises(ValueError, match=field):
            SamplingParams(**bad)


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


def test_seeded_sampling_is_reproducible():
    llm = make_llm()
    p = SamplingParams(max_tokens=8, temperature=0.8, seed=7)
    a, b = llm.generate(["x", "x"], [p, p])
    c = llm.generate("x", SamplingParams(max_tokens=8, temperature=0.8, seed=8))[0]
    assert a.outputs[0].token_ids == b.outputs[0].token_ids != c.outputs[0].token_ids


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


def test_a_tiny_kv_budget_gives_the_same_outputs_as_a_big_one():
    prompts = [f"request {i} asks something" for i in range(6)]
    params = SamplingParams(max_tokens=12, temperature=0)
    big = make_llm(num_kv_blocks=200).generate(prompts, params)
    tiny_llm = make_llm(num_kv_blocks=12, max_num_batched_tokens=16)
    tiny = tiny_llm.generate(prompts, params)
    assert [o.outputs[0].token_ids for o in tiny] == [o.outputs[0].token_ids for o in big]
    assert [o.outputs[0].text for o in tiny] == [o.outputs[0].text for o in big]
    assert any(s.preempted for s in tiny_llm.engine.runner.steps)
    assert_no_leaks(tiny_llm.engine)


def test_metrics_are_labelled_by_model_and_two_engines_share_one_registry():
    registry = CollectorRegistry()
    a = engine(registry=registry)
    LLMEngine(fake_config(), FakeRunner(fake_config()), model_name="other", registry=registry)
    a.add_request("m", "hello there", params=GREEDY)
    drain(a)
    text = generate_latest(registry).decode()
    assert 'tollgate:generation_tokens_total{model_name="fake"} 6.0' in text
    assert 'tollgate:prompt_tokens_total{model_name="fake"} 11.0' in text
    assert 'tollgate:time_to_first_token_seconds_count{model_name="fake"} 1.0' in text
    assert 'tollgate:kv_blocks_total{model_name="fake"} 64.0' in text
    assert 'tollgate:prefix_cache_queries_total{model_name="fake"} 2.0' in text
    assert 'model_name="other"' in text


def test_two_engines_on_the_default_registry_do_not_collide():
    config = fake_config()
    LLMEngine(config, FakeRunner(config))
    LLMEngine(config, FakeRunner(config))
