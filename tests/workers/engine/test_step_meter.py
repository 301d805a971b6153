"""Metered worker time: the split of one step, and every step's time reaching exactly the requests in it."""
import itertools

import pytest
from prometheus_client import CollectorRegistry

from tests.workers.engine.fakes import FakeRunner, fake_config
from workers.engine.llm_engine import LLMEngine
from workers.engine.step_meter import RowWork, StepMeter, split_step
from workers.sampling_params import SamplingParams


def test_split_by_weighted_tokens():
    rows = [RowWork("a", prefill_tokens=30, decode_tokens=0), RowWork("b", 0, 1), RowWork("c", 0, 1)]
    # weights 30, 5, 5 of 40
    assert split_step(8.0, rows, decode_weight=5.0) == pytest.approx({"a": 6.0, "b": 1.0, "c": 1.0})


def test_rows_of_one_request_add_up_and_shares_sum_to_the_step():
    rows = [RowWork("a", 0, 1), RowWork("a", 0, 1), RowWork("b", 7, 0)]  # two completions of "a"
    shares = split_step(3.0, rows, decode_weight=1.0)
    assert shares == pytest.approx({"a": 2 / 3, "b": 7 / 3})
    assert sum(shares.values()) == 3.0  # exactly: the last share takes the rounding


def test_zero_weight_rows_share_equally_and_empty_steps_charge_nobody():
    assert split_step(4.0, [RowWork("a", 0, 1), RowWork("b", 0, 2)], decode_weight=0.0) == {"a": 2.0, "b": 2.0}
    assert split_step(4.0, [], decode_weight=1.0) == {}


def test_negative_decode_weight_is_refused():
    with pytest.raises(ValueError, match="decode_weight"):
        StepMeter(-1.0)
    with pytest.raises(ValueError, match="meter_decode_weight"):
        fake_config(meter_decode_weight=-0.5)


def _engine(**cfg):
    config = fake_config(**cfg)
    return LLMEngine(config, FakeRunner(config), registry=CollectorRegistry())


def test_engine_ms_of_all_requests_equals_the_sum_of_step_times():
    """Chunked prefill (prompts longer than the token budget), n > 1, a mid-flight abort: every metered
    millisecond lands on exactly one request's final output."""
    eng = _engine(max_num_batched_tokens=16)
    ticks = itertools.count()
    eng.meter = StepMeter(2.0, clock=lambda: next(ticks) * 0.0015)  # every step "takes" 1.5 ms
    eng.add_request("long", "x" * 40, params=SamplingParams(max_tokens=5, temperature=0))
    eng.add_request("short", "hi", params=SamplingParams(max_tokens=8, temperature=0))
    eng.add_request("many", "abc", params=SamplingParams(max_tokens=4, n=3, temperature=0.8, seed=1))
    eng.add_request("gone", "hello", params=SamplingParams(max_tokens=50, temperature=0))
    finals, steps = {}, 0
    while eng.has_unfinished_requests():
        outputs = eng.step()
        steps += 1
        for o in outputs:
            assert o.engine_ms >= 0
            if o.finished:
                finals[o.request_id] = o
        if steps == 3:
            finals["gone"] = eng.abort("gone")
    assert set(finals) == {"long", "short", "many", "gone"}
    total = sum(o.engine_ms for o in finals.values())
    assert total == pytest.approx(eng.meter.metered_ms, rel=1e-12)
    assert eng.meter.metered_ms == pytest.approx(1.5 * steps)
    assert eng.meter._ms == {}  # nothing kept for finished requests


def test_engine_ms_is_cumulative_and_survives_delta_merging():
    eng = LLMEngine(fake_config(), FakeRunner(fake_config()), deltas=True, registry=CollectorRegistry())
    eng.add_request("a", "hey", params=SamplingParams(max_tokens=4, temperature=0))
    outs = []
    while eng.has_unfinished_requests():
        outs += eng.step()
    seen = [o.engine_ms for o in outs]
    assert seen == sorted(seen) and seen[-1] > 0
    merged = outs[0]
    for o in outs[1:]:
        merged = merged.merge_delta(o)
    assert merged.engine_ms == seen[-1] == pytest.approx(eng.meter.metered_ms)
