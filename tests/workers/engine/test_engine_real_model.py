"""The engine end to end on the real SmolLM2 model (one session-scoped LLM; short prompts)."""
import pytest

from workers.sampling_params import SamplingParams

pytestmark = pytest.mark.model

QUESTION = [{"role": "user", "content": "What is the capital of France?"}]
SYSTEM = ("You are a helpful assistant for a model-serving company. Answer in one short sentence. "
          "Mention only facts you are sure of. Be polite and precise. ") * 7


def test_greedy_chat_answer_is_non_empty_and_deterministic(real_llm):
    params = SamplingParams(max_tokens=8, temperature=0)
    first, second = real_llm.chat([QUESTION, QUESTION], params)
    text = first.outputs[0].text
    assert text.strip() and "\ufffd" not in text and "Paris" in text
    assert first.outputs[0].token_ids == second.outputs[0].token_ids


def test_same_seed_same_sample(real_llm):
    p = SamplingParams(max_tokens=6, temperature=1.0, top_p=0.95, seed=1234)
    a, b = real_llm.chat([QUESTION, QUESTION], p)
    assert a.outputs[0].token_ids == b.outputs[0].token_ids and len(a.outputs[0].token_ids) > 0


def test_long_system_prompt_is_reused_by_the_second_request(real_llm):
    engine = real_llm.engine
    assert len(engine.tokenizer.encode(SYSTEM)) >= 200
    params = SamplingParams(max_tokens=4, temperature=0)
    conv = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Hi"}]
    hits_before = engine.block_manager.stats.hits
    first = real_llm.chat(conv, params)[0]
    hits_mid = engine.block_manager.stats.hits
    second = real_llm.chat(conv, params)[0]
    # Earlier chats in the session share at most the head of the first block ("<|im_start|>system\n").
    assert hits_mid == hits_before and first.num_cached_tokens < engine.config.block_size
    assert engine.block_manager.stats.hits - hits_mid >= 12
    assert second.num_cached_tokens >= 12 * engine.config.block_size
    # Attending over cached blocks gives what computing them afresh gave.
    assert second.outputs[0].token_ids == first.outputs[0].token_ids


def test_a_prompt_sharing_the_head_of_a_cached_block_reuses_it_and_answers_the_same(real_llm):
    engine = real_llm.engine
    bs = engine.config.block_size
    params = SamplingParams(max_tokens=4, temperature=0)
    first = [{"role": "user", "content": "Write a short story about the old lighthouse keeper."}]
    second = [{"role": "user", "content": "Write a short story about the winter sea."}]
    real_llm.chat(first, params)
    partial_before = engine.block_manager.stats.partial_tokens
    reused = real_llm.chat(second, params)[0]
    assert engine.block_manager.stats.partial_tokens > partial_before
    assert reused.num_cached_tokens % bs != 0  # full blocks and the head of the next one
    engine.block_manager.enable_prefix_caching = False  # the same prompt computed afresh
    try:
        fresh = real_llm.chat(second, params)[0]
    finally:
        engine.block_manager.enable_prefix_caching = engine.config.enable_prefix_caching
    assert fresh.num_cached_tokens == 0
    assert reused.outputs[0].token_ids == fresh.outputs[0].token_ids


def test_chunked_prefill_matches_one_shot_prefill(real_llm):
    engine = real_llm.engine
    prompt = "Write one sentence about the sea, the wind and the old lighthouse keeper."
    params = SamplingParams(max_tokens=4, temperature=0)
    whole = real_llm.generate(prompt, params)[0]
    engine.block_manager.enable_prefix_caching = False  # recompute everything, in chunks of 5
    engine.scheduler.max_num_batched_tokens = 5
    try:
        chunked = real_llm.generate(prompt, params)[0]
    finally:
        engine.scheduler.max_num_batched_tokens = engine.config.max_num_batched_tokens
        engine.block_manager.enable_prefix_caching = engine.config.enable_prefix_caching
    assert chunked.num_cached_tokens == 0
    assert chunked.outputs[0].token_ids == whole.outputs[0].token_ids


def test_no_blocks_leaked(real_llm):
    real_llm.generate(["Once upon a time", "The sky is"], SamplingParams(max_tokens=4, temperature=0))
    bm = real_llm.engine.block_manager
    assert not real_llm.engine.has_unfinished_requests()
    assert bm.num_free_blocks == bm.num_blocks and all(b.ref_count == 0 for b in bm.blocks)


def test_n_completions_share_the_prompt_and_greedy_children_match_n_1(real_llm):
    prompt_len = len(real_llm.tokenizer.apply_chat_template(QUESTION))
    assert prompt_len % real_llm.engine.config.block_size != 0  # the forks copy a partial block's KV
    sampled = real_llm.chat(QUESTION, SamplingParams(n=3, max_tokens=6, temperature=0.8, seed=7, logprobs=2))[0]
    assert [c.index for c in sampled.outputs] == [0, 1, 2] and sampled.num_prompt_tokens == prompt_len
    assert all(c.finished and c.token_ids for c in sampled.outputs)
    assert sampled.num_output_tokens == sum(len(c.token_ids) for c in sampled.outputs)
    for lp in (lp for c in sampled.outputs for lp in c.logprobs):
        assert len(lp.top) == 2 and lp.top[0][1] >= lp.top[1][1] and lp.logprob <= lp.top[0][1] + 1e-6 <= 1e-6
    params = SamplingParams(max_tokens=8, temperature=0, logprobs=1)
    two = real_llm.chat(QUESTION, SamplingParams(n=2, max_tokens=8, temperature=0, logprobs=1))[0]
    one = real_llm.chat(QUESTION, params)[0]
    assert two.outputs[0].text == two.outputs[1].text == one.outputs[0].text
    assert two.outputs[1].token_ids == one.outputs[0].token_ids
    # Greedy: the sampled token is the most likely one, and its logprob is that top entry's.
    assert all(lp.top[0] == (lp.token_id, lp.logprob) for lp in one.outputs[0].logprobs)
    bm = real_llm.engine.block_manager
    assert bm.num_free_blocks == bm.num_blocks
