"""Structured output through the whole engine (submission, scheduler, forks, preemption, outputs) over a fake
model whose logits are seeded noise, sampled by the real Sampler: every completion must still be valid."""
import json
import zlib

import jsonschema
import pytest
import torch
from prometheus_client import CollectorRegistry

from tests.workers.engine.fakes import EOS, FakeRunner, fake_config
from workers.engine.async_engine import AsyncEngine
from workers.engine.llm_engine import LLMEngine
from workers.engine.sampler import Sampler
from workers.sampling_params import SamplingParams

SCHEMA = {"type": "object", "properties": {
    "id": {"type": "integer", "minimum": 0, "maximum": 999},
    "tag": {"type": "string", "maxLength": 3},
    "on": {"type": "boolean"},
}, "required": ["id", "tag", "on"], "additionalProperties": False}
STRUCTURED = {"kind": "json_schema", "value": SCHEMA}


class NoiseRunner(FakeRunner):
    """FakeRunner whose 'model' gives each (tokens so far, completion) its own seeded random logits, drawn
    from by the engine's Sampler, grammar masks included."""

    def __init__(self, config, **kw) -> None:
        super().__init__(config, **kw)
        self.sampler = Sampler(config.seed, eos_token_ids={EOS})

    def _sample(self, seq, index: int) -> int:
        g = torch.Generator().manual_seed(zlib.crc32(repr((seq.token_ids, index)).encode()))
        return self.sampler.sample(torch.randn(1, 257, generator=g) * 3, [seq], [index]).token_ids[0]

    def release(self, request_id: str) -> None:
        super().release(request_id)
        self.sampler.release(request_id)


def engine(**cfg) -> LLMEngine:
    config = fake_config(**cfg)
    return LLMEngine(config, NoiseRunner(config), registry=CollectorRegistry())


def drain(eng):
    finals = {}
    while eng.has_unfinished_requests():
        finals.update((o.request_id, o) for o in eng.step() if o.finished)
    return finals


def assert_valid(output):
    for c in output.outputs:
        assert c.finish_reason == "stop", c
        jsonschema.validate(json.loads(c.text), SCHEMA)


def test_greedy_sampled_and_n_completions_all_end_with_a_valid_value():
    eng = engine()
    params = [SamplingParams(max_tokens=200, temperature=0, structured=STRUCTURED),
              SamplingParams(max_tokens=200, temperature=1.0, seed=3, structured=STRUCTURED),
              SamplingParams(max_tokens=200, temperature=1.0, seed=4, n=3, structured=STRUCTURED)]
    for i, p in enumerate(params):
        eng.add_request(f"r{i}", "give me json", params=p)
    eng.add_request("plain", "free text", params=SamplingParams(max_tokens=5, temperature=0))
    finals = drain(eng)
    for i in range(3):
        assert_valid(finals[f"r{i}"])
    assert len(finals["r2"].outputs) == 3 and len({c.text for c in finals["r2"].outputs}) > 1
    assert len(eng.input_processor.grammars) == 1  # one schema: compiled once
    assert len(eng.runner.sampler.grammars) == 0  # every matcher released with its request
    assert eng.block_manager.num_free_blocks == eng.block_manager.num_blocks


def test_preempted_and_recomputed_sequences_keep_their_matcher_in_step():
    eng = engine(num_kv_blocks=14, max_num_seqs=6)  # 4-token blocks: six requests cannot all fit
    for i in range(6):
        eng.add_request(f"r{i}", "json please", params=SamplingParams(max_tokens=200, temperature=1.0, seed=i,
                                                                       structured=STRUCTURED))
    finals = drain(eng)
    assert any(out.preempted for out in eng.runner.steps)
    for out in finals.values():
        assert_valid(out)


def test_max_tokens_cuts_the_value_with_length():
    eng = engine()
    eng.add_request("r", "json", params=SamplingParams(max_tokens=3, temperature=0, structured=STRUCTURED))
    out = drain(eng)["r"].outputs[0]
    assert out.finish_reason == "length" and out.text.startswith('{"i')


@pytest.mark.parametrize("structured", [
    {"kind": "json_schema", "value": {"type": "object", "properties": {"a": {"type": "strin"}}}},
    {"kind": "regex", "value": "[a-"},
    {"kind": "grammar", "value": "start: missing"},
])
def test_a_spec_that_does_not_compile_is_refused_at_submission(structured):
    eng = engine()
    with pytest.raises(ValueError, match=r"^structured: invalid"):
        eng.add_request("bad", "x", params=SamplingParams(structured=structured))
    assert not eng.has_unfinished_requests()
    eng.add_request("bad", "x", params=SamplingParams(max_tokens=50, temperature=0, structured=STRUCTURED))
    assert_valid(drain(eng)["bad"])


async def test_the_async_engine_refuses_a_bad_spec_before_queueing_anything():
    config = fake_config()
    eng = AsyncEngine(config, NoiseRunner(config), registry=CollectorRegistry())
    bad = SamplingParams(structured={"kind": "json_schema", "value": {"type": "foo"}})
    with pytest.raises(ValueError, match="structured"):
        await anext(eng.generate("bad", "x", params=bad))
    assert eng._thread is None  # nothing was queued; the loop was not even started
    good = SamplingParams(max_tokens=100, temperature=1.0, seed=1, structured=STRUCTURED)
    outs = [o async for o in eng.generate("good", "x", params=good)]
    await eng.stop()
    jsonschema.validate(json.loads("".join(o.outputs[0].text for o in outs if o.outputs)), SCHEMA)
    assert outs[-1].outputs[0].finish_reason == "stop"
