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
    system_ids = engine.tokenizer.encode(SYSTEM)
    assert len(system_ids) >= 200
    params = SamplingParams(max_tokens=2, temperature=0)
    hits_before = engine.block_manager.stats.hits
    first = real_llm.chat([{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Hi"}], params)[0]
    hits_mid = engine.block_manager.stats.hits
    second = real_llm.chat([{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Bye"}], params)[0]
    assert hits_mid == hits_before and first.num_cached_tokens == 0
    assert engine.block_manager.stats.hits - hits_mid >= 12
    assert second.num_cached_tokens >= 12 * engine.config.block_size


def test_no_blocks_leaked(real_llm):
    real_llm.generate(["Once upon a time", "The sky is"], SamplingParams(max_tokens=4, temperature=0))
    bm = real_llm.engine.block_manager
    assert not real_llm.engine.has_unfinished_requests()
    assert bm.num_free_blocks == bm.num_blocks and all(b.ref_count == 0 for b in bm.blocks)
