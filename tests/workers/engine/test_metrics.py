from prometheus_client import CollectorRegistry, generate_latest

from tests.workers.engine.fakes import FakeRunner, fake_config
from workers.engine.llm_engine import LLMEngine
from workers.sampling_params import SamplingParams

GREEDY = SamplingParams(max_tokens=6, temperature=0)


def drain(eng):
    while eng.has_unfinished_requests():
        eng.step()


def engine(registry, **cfg):
    config = fake_config(**cfg)
    return LLMEngine(config, FakeRunner(config), registry=registry)


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


def test_an_n_request_counts_its_prompt_once_and_every_completions_tokens():
    registry = CollectorRegistry()
    eng = engine(registry=registry)
    eng.add_request("n", "hello there", params=SamplingParams(n=3, max_tokens=4, temperature=0.5, seed=1))
    drain(eng)
    text = generate_latest(registry).decode()
    assert 'tollgate:generation_tokens_total{model_name="fake"} 12.0' in text
    assert 'tollgate:prompt_tokens_total{model_name="fake"} 11.0' in text
    assert 'tollgate:time_to_first_token_seconds_count{model_name="fake"} 1.0' in text
    assert 'tollgate:e2e_request_latency_seconds_count{model_name="fake"} 1.0' in text


def test_tokens_reused_from_the_head_of_a_cached_block_are_counted():
    registry = CollectorRegistry()
    eng = engine(registry=registry)
    eng.add_request("a", "hello there, friend", params=GREEDY)
    drain(eng)
    eng.add_request("b", "hello there, fiend!", params=GREEDY)
    drain(eng)
    text = generate_latest(registry).decode()
    # Blocks of 4: "hell", "o th", "ere,", " fri" cached; b shares three blocks and " f" of the fourth.
    assert 'tollgate:prefix_cache_hits_total{model_name="fake"} 3.0' in text
    assert 'tollgate:prefix_cache_partial_tokens_total{model_name="fake"} 2.0' in text
