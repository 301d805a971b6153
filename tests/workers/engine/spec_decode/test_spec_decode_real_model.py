"""Speculative decoding on the real SmolLM2 model (the session's model_runner; short runs).

Greedy outputs with drafting on are held to the HF references exactly as test_reference_equivalence holds
the engine without it: equal tokens, except after a near-tie, where float summation order (a verification
pass computes 1 + k tokens as a chunk, a plain step one) may legitimately pick either token."""
from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from tests.workers.reference import REFERENCE_NEW_TOKENS, divergence
from workers.config import EngineConfig
from workers.engine.llm_engine import LLMEngine
from workers.engine.spec_decode.draft_model import DraftModel
from workers.sampling_params import SamplingParams
from workers.speculative_config import SpeculativeConfig

pytestmark = pytest.mark.model

GREEDY = SamplingParams(max_tokens=REFERENCE_NEW_TOKENS, temperature=0)
NGRAM = {"method": "ngram", "num_tokens": 4, "lookup_min": 2, "lookup_max": 4}
SELF_DRAFT = {"method": "draft", "num_tokens": 3, "num_layers": 10}
# Input-grounded: the answer copies its prompt, so n-gram drafts are accepted.
COPY = [{"role": "user", "content": "Repeat this sentence exactly: The old lighthouse keeper climbed the stairs "
                                    "every night to light the lamp for the ships."}]


@pytest.fixture
def self_draft(model_runner):
    """The runner with a self-draft (its first 10 layers) for the test; no drafter afterwards."""
    model_runner.drafter = DraftModel.build(SpeculativeConfig(**SELF_DRAFT), model_runner, EngineConfig())
    yield model_runner
    model_runner.drafter = None


def _engine(runner, spec, **overrides) -> LLMEngine:
    config = EngineConfig(num_kv_blocks=runner.num_kv_blocks, speculative=spec, **overrides)
    return LLMEngine(config, runner=runner, registry=CollectorRegistry())


def _small_pool_engine(runner, spec, num_blocks: int) -> LLMEngine:
    # The engine sizes its block pool from the runner; the runner's own (larger) cache stays as it is.
    full = runner.num_kv_blocks
    runner.num_kv_blocks = num_blocks
    try:
        return _engine(runner, spec)
    finally:
        runner.num_kv_blocks = full


def _drain(engine, submit, staggered: int | None = None) -> dict:
    """Run requests [(id, prompt, params)]: all at once, or `staggered` new ones between steps."""
    pending, finals = list(submit), {}
    while pending or engine.has_unfinished_requests():
        take = len(pending) if staggered is None else staggered
        for rid, prompt, params in pending[:take]:
            engine.add_request(rid, prompt, params=params)
        pending = pending[take:]
        for out in engine.step():
            if out.finished:
                finals[out.request_id] = out
    bm = engine.block_manager
    assert bm.num_free_blocks == bm.num_blocks and all(b.ref_count == 0 for b in bm.blocks)
    return finals


def _check(references, finals) -> None:
    failures = [f"prompt {i}: {why}" for i, ref in enumerate(references)
                if (why := divergence(ref, finals[str(i)].outputs[0].token_ids)) is not None]
    assert not failures, "\n".join(failures)


def _acceptance(engine) -> tuple[int, int]:
    """(draft tokens, accepted) so far, from the engine's metrics."""
    m = engine.metrics._m
    return (int(m["spec_decode_num_draft_tokens"]._value.get()),
            int(m["spec_decode_num_accepted_tokens"]._value.get()))


def test_ngram_greedy_matches_the_reference_alone_and_batched(model_runner, hf_references):
    submit = [(str(i), ref.prompt_ids, GREEDY) for i, ref in enumerate(hf_references)]
    # Alone: every fourth prompt, one at a time (a quarter of the time the sixteen took; each verifies its own
    # drafts with no other sequence in the step). Batched: all sixteen, staggered.
    alone_submit = submit[::4]
    alone = _engine(model_runner, NGRAM)
    finals = {rid: _drain(alone, [(rid, p, s)])[rid] for rid, p, s in alone_submit}
    _check([hf_references[int(rid)] for rid, _, _ in alone_submit],
           {str(i): finals[rid] for i, (rid, _, _) in enumerate(alone_submit)})
    batched = _engine(model_runner, NGRAM, max_num_batched_tokens=64)  # chunked prefills share steps with drafts
    _check(hf_references, _drain(batched, submit, staggered=2))
    assert all(_acceptance(e)[1] > 0 for e in (alone, batched))


def test_self_draft_greedy_matches_the_reference_batched(self_draft, hf_references):
    engine = _engine(self_draft, SELF_DRAFT, max_num_batched_tokens=64)
    submit = [(str(i), ref.prompt_ids, GREEDY) for i, ref in enumerate(hf_references)]
    _check(hf_references, _drain(engine, submit, staggered=4))
    drafted, accepted = _acceptance(engine)
    assert drafted > 0 and accepted > 0


@pytest.mark.parametrize("shares_kv", [True, False])
def test_a_full_depth_draft_is_always_accepted(model_runner, shares_kv):
    # The target's every layer as the draft, in the target's KV (an early exit after the last layer) or over
    # KV of its own: every greedy draft must be accepted (but for near-ties), which holds only if the draft
    # reads the right context: the target's, or its own lazily computed one.
    k, v = model_runner.k_cache, model_runner.v_cache
    model = model_runner.model.early_exit(model_runner.model.config.num_layers)
    caches = (k, v) if shares_kv else (k.new_zeros(k.shape), v.new_zeros(v.shape))
    model_runner.drafter = DraftModel(model, *caches, model_runner, shares_kv=shares_kv)
    try:
        engine = _engine(model_runner, {"method": "draft", "num_tokens": 3})
        ids = model_runner.tokenizer.apply_chat_template(COPY)
        params = SamplingParams(max_tokens=24, temperature=0)
        spec = _drain(engine, [("a", ids, params), ("b", ids[:-3], params)])
    finally:
        model_runner.drafter = None
    plain = _drain(_engine(model_runner, None), [("a", ids, params), ("b", ids[:-3], params)])
    assert {r: o.outputs[0].token_ids for r, o in spec.items()} == {r: o.outputs[0].token_ids for r, o in plain.items()}
    drafted, accepted = _acceptance(engine)
    assert drafted > 0 and accepted >= 0.9 * drafted


def test_copying_takes_fewer_steps_and_sampling_preemption_n_and_stops_work(model_runner):
    ids = model_runner.tokenizer.apply_chat_template(COPY)
    greedy = SamplingParams(max_tokens=32, temperature=0)
    plain = _drain(_engine(model_runner, None), [("g", ids, greedy)])["g"].outputs[0]
    engine = _engine(model_runner, NGRAM)
    steps = 0
    engine.add_request("g", ids, params=greedy)
    while engine.has_unfinished_requests():
        steps += 1
        out = engine.step()
    assert out[0].outputs[0].token_ids == plain.token_ids
    assert steps < len(plain.token_ids) * 0.6
    # Under a pool small enough to preempt: greedy, a stop string, sampled n > 1 with logprobs.
    assert "stairs" in plain.text
    stopped = SamplingParams(max_tokens=32, temperature=0, stop=["stairs"])
    # ignore_eos: the sampled completions run their 20 tokens whatever they draw, so the pool runs short.
    sampled = SamplingParams(n=2, max_tokens=20, temperature=0.8, seed=3, logprobs=1, ignore_eos=True)
    small = _small_pool_engine(model_runner, NGRAM, num_blocks=7)
    finals = _drain(small, [("g", ids, greedy), ("t", ids, stopped), ("s", ids, sampled)])
    assert small.metrics._m["num_preemptions"]._value.get() > 0
    assert finals["g"].outputs[0].token_ids == plain.token_ids
    t = finals["t"].outputs[0]
    assert t.finish_reason == "stop" and t.text == plain.text[:plain.text.index("stairs")]
    assert t.token_ids == plain.token_ids[:len(t.token_ids)]  # none past the stop string's token
    for c in finals["s"].outputs:
        assert c.token_ids and len(c.logprobs) == len(c.token_ids)
        assert c.cumulative_logprob == pytest.approx(sum(lp.logprob for lp in c.logprobs), abs=1e-3)
