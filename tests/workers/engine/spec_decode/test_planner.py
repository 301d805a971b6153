"""Speculative decoding through the scheduler and the engine glue, over the fake runner (n-gram drafts).

The fake model is deterministic; SpecFakeRunner verifies drafts against it and keeps the token each KV slot
was written for, so a rollback that counted a rejected draft as computed fails the next step's attention."""
import random

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from tests.workers.engine.fakes import fake_config
from tests.workers.engine.spec_decode.fakes import SpecFakeRunner
from workers.engine.llm_engine import LLMEngine
from workers.sampling_params import SamplingParams

NGRAM = {"method": "ngram", "num_tokens": 4, "lookup_min": 2, "lookup_max": 4}
REPLY = b"the cat sat on the mat; the cat sat on the hat; the dog sat on the cat"
PROMPTS = ["the cat sat on the mat", "abcabcabcabc", "hello world, hello", "x"]


def engine(spec=NGRAM, reply=None, registry=None, **cfg):
    config = fake_config(speculative=spec, **cfg)
    runner = SpecFakeRunner(config, reply=reply)
    return LLMEngine(config, runner, registry=registry or CollectorRegistry()), runner


def drain(eng, submit=()):
    finals, pending = {}, list(submit)
    while pending or eng.has_unfinished_requests():
        if pending:
            rid, prompt, params = pending.pop(0)
            eng.add_request(rid, prompt, params=params)
        for o in eng.step():
            if o.finished:
                finals[o.request_id] = o
    return finals


def one_at_a_time(eng, submit):
    return {rid: drain(eng, [(rid, prompt, params)])[rid] for rid, prompt, params in submit}


def outputs(finals):
    return {rid: [(c.token_ids, c.text, c.finish_reason) for c in o.outputs] for rid, o in finals.items()}


def assert_clean(eng, runner):
    """No leaked block, and every block the prefix cache publishes holds the KV of exactly its tokens."""
    bm = eng.block_manager
    assert bm.num_free_blocks == bm.num_blocks and all(b.ref_count == 0 for b in bm.blocks)
    for block in bm.blocks:
        if block.hash is not None:
            assert runner.kv[block.block_id] == list(block.token_ids), f"block {block.block_id}"


def requests(params, prompts=PROMPTS):
    return [(str(i), p, params) for i, p in enumerate(prompts)]


@pytest.mark.parametrize("reply", [None, REPLY])
def test_greedy_output_is_the_same_with_drafts_alone_and_batched(reply):
    greedy = SamplingParams(max_tokens=40, temperature=0)
    for batched in (False, True):
        base_eng, _ = engine(spec=None, reply=reply)
        spec_eng, runner = engine(reply=reply)
        run = drain if batched else one_at_a_time
        base, spec = run(base_eng, requests(greedy)), run(spec_eng, requests(greedy))
        assert outputs(spec) == outputs(base)
        assert any(a == d for d, a in runner.verified) and len(runner.steps) < len(base_eng.runner.steps)
        if reply is not None:
            assert any(a < d for d, a in runner.verified)  # some drafts were rejected and rolled back
        assert_clean(spec_eng, runner)


def test_no_leaks_after_rejections_preemption_and_aborts():
    rng = random.Random(3)
    eng, runner = engine(reply=REPLY, num_kv_blocks=24, max_num_batched_tokens=24)
    live = []
    for step in range(400):
        if step < 30 and rng.random() < 0.5:
            rid = f"r{step}"
            params = SamplingParams(max_tokens=rng.randint(5, 40), temperature=rng.choice([0, 0.8]), seed=step)
            eng.add_request(rid, rng.choice(PROMPTS) * rng.randint(1, 2), params=params)
            live.append(rid)
        if live and rng.random() < 0.05:
            eng.abort(live.pop(rng.randrange(len(live))))
        eng.step()
        if step > 30 and not eng.has_unfinished_requests():
            break
    assert not eng.has_unfinished_requests()
    assert any(o.preempted for o in runner.steps) and any(a < d for d, a in runner.verified)
    assert_clean(eng, runner)


def test_preemption_with_drafts_matches_an_unconstrained_run():
    greedy = SamplingParams(max_tokens=30, temperature=0)
    big, _ = engine(reply=REPLY)
    small, runner = engine(reply=REPLY, num_kv_blocks=16)  # each request fits alone (<= 52 tokens), not all
    assert outputs(drain(small, requests(greedy))) == outputs(drain(big, requests(greedy)))
    assert any(o.preempted for o in runner.steps)
    assert_clean(small, runner)


def test_drafts_never_preempt_another_sequence():
    greedy = SamplingParams(max_tokens=30, temperature=0)
    base, base_runner = engine(spec=None, reply=REPLY, num_kv_blocks=12)
    spec, runner = engine(reply=REPLY, num_kv_blocks=12)
    drain(base, requests(greedy))
    drain(spec, requests(greedy))
    preempted = sum(len(o.preempted) for o in runner.steps)
    assert preempted <= sum(len(o.preempted) for o in base_runner.steps)


def test_max_tokens_and_max_model_len_are_never_exceeded():
    eng, runner = engine(reply=REPLY * 2, max_model_len=40)
    finals = drain(eng, [("a", "the cat sat", SamplingParams(max_tokens=13, temperature=0)),
                         ("b", "the cat sat on the mat; the cat sat on", SamplingParams(max_tokens=50, temperature=0))])
    assert len(finals["a"].outputs[0].token_ids) == 13 and finals["a"].outputs[0].finish_reason == "length"
    b = finals["b"]
    assert len(b.prompt_token_ids) + len(b.outputs[0].token_ids) == 40 and b.outputs[0].finish_reason == "length"
    assert runner.verified
    assert_clean(eng, runner)


def test_stop_strings_end_the_text_as_without_drafts_and_drop_the_tokens_after():
    params = SamplingParams(max_tokens=60, temperature=0, stop=["the hat"], logprobs=1)
    base_eng, _ = engine(spec=None, reply=REPLY)
    spec_eng, runner = engine(reply=REPLY)
    base, spec = drain(base_eng, requests(params)), drain(spec_eng, requests(params))
    assert outputs(spec) == outputs(base)
    for rid in base:
        b, s = base[rid].outputs[0], spec[rid].outputs[0]
        assert s.logprobs == b.logprobs and s.cumulative_logprob == pytest.approx(b.cumulative_logprob)
        assert spec[rid].num_output_tokens == base[rid].num_output_tokens
    assert spec["0"].outputs[0].finish_reason == "stop"
    assert_clean(spec_eng, runner)


def test_n_completions_and_logprobs_with_drafts():
    params = SamplingParams(n=3, max_tokens=30, temperature=0, logprobs=2)
    base_eng, _ = engine(spec=None, reply=REPLY)
    spec_eng, runner = engine(reply=REPLY)
    base, spec = drain(base_eng, requests(params)), drain(spec_eng, requests(params))
    assert outputs(spec) == outputs(base)
    for rid in base:
        for b, s in zip(base[rid].outputs, spec[rid].outputs):
            assert s.logprobs == b.logprobs and s.cumulative_logprob == pytest.approx(b.cumulative_logprob)
    assert runner.verified
    assert_clean(spec_eng, runner)


def test_opted_out_requests_never_draft():
    eng, runner = engine(reply=REPLY)
    drain(eng, requests(SamplingParams(max_tokens=30, temperature=0, speculative=False)))
    drain(eng, requests(SamplingParams(max_tokens=30, temperature=0, repetition_penalty=1.3)))
    assert not runner.verified and all(s.num_draft_tokens == 0 for o in runner.steps for s in o.scheduled)


def test_a_full_batch_stops_drafting():
    eng, runner = engine(spec={**NGRAM, "max_batch_size": 2}, reply=REPLY)
    drain(eng, requests(SamplingParams(max_tokens=30, temperature=0)))
    for o in runner.steps:
        decoding = [s for s in o.scheduled if s.num_new_tokens - s.num_draft_tokens == 1]
        if any(s.num_draft_tokens for s in o.scheduled):
            assert len(decoding) <= 2


def test_metrics_count_drafts_and_acceptance_by_position():
    registry = CollectorRegistry()
    eng, runner = engine(reply=REPLY, registry=registry)
    drain(eng, requests(SamplingParams(max_tokens=40, temperature=0)))
    text = generate_latest(registry).decode()
    drafted = sum(d for d, _ in runner.verified)
    accepted = sum(a for _, a in runner.verified)
    assert f'tollgate:spec_decode_num_drafts_total{{model_name="fake"}} {float(len(runner.verified))}' in text
    assert f'tollgate:spec_decode_num_draft_tokens_total{{model_name="fake"}} {float(drafted)}' in text
    assert f'tollgate:spec_decode_num_accepted_tokens_total{{model_name="fake"}} {float(accepted)}' in text
    first = sum(1 for _, a in runner.verified if a >= 1)
    assert (f'tollgate:spec_decode_num_accepted_tokens_per_pos_total{{model_name="fake",position="0"}} '
            f'{float(first)}') in text
    assert 'tollgate:generation_tokens_total{model_name="fake"} 160.0' in text  # 4 x 40, drafts included
