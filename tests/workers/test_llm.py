"""The offline API (vLLM-shaped LLM.generate / LLM.chat) over the fake runner."""
import pytest

from tests.workers.engine.fakes import FakeRunner, fake_config
from workers import LLM, SamplingParams

GREEDY = SamplingParams(max_tokens=6, temperature=0)


def make_llm(**cfg):
    config = fake_config(**cfg)
    fields = {f: getattr(config, f) for f in config.__slots__ if f != "model"}
    return LLM("fake", runner=FakeRunner(config), **fields)


def assert_no_leaks(eng):
    bm = eng.block_manager
    assert bm.num_free_blocks == bm.num_blocks and all(b.ref_count == 0 for b in bm.blocks)


def test_bad_prompts_argument():
    llm = make_llm()
    for bad in ([], None, 3):
        with pytest.raises(ValueError, match="prompts"):
            llm.generate(bad, GREEDY)
    with pytest.raises(ValueError, match="conversations"):
        llm.chat([], GREEDY)


def test_a_bad_prompt_in_a_batch_submits_nothing():
    llm = make_llm()
    with pytest.raises(ValueError, match="prompt"):
        llm.generate(["fine", ""], GREEDY)
    assert not llm.engine.has_unfinished_requests()
    assert llm.generate("fine", GREEDY)[0].finished


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


def test_seeded_sampling_is_reproducible():
    llm = make_llm()
    p = SamplingParams(max_tokens=8, temperature=0.8, seed=7)
    a, b = llm.generate(["x", "x"], [p, p])
    c = llm.generate("x", SamplingParams(max_tokens=8, temperature=0.8, seed=8))[0]
    assert a.outputs[0].token_ids == b.outputs[0].token_ids != c.outputs[0].token_ids


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
