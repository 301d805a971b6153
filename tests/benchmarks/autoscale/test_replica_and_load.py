"""The replica model reproduces the two engine figures it is built from; the fluid load serves what fits,
queues the rest oldest first, and reports what Ray's autoscaler would count."""
from __future__ import annotations

import pytest

from benchmarks.autoscale.load import Load
from benchmarks.autoscale.replica import ReplicaModel


def test_the_step_model_passes_through_both_measured_points():
    m = ReplicaModel(full_batch_tok_s=412.6, full_batch=32, batch1_tok_s=66.5)
    assert m.throughput(1) == pytest.approx(66.5)
    assert m.throughput(32) == pytest.approx(412.6)
    assert m.throughput(200) == m.throughput(m.max_num_seqs)  # beyond max_num_seqs requests wait
    assert m.throughput(8) < m.throughput(16) < m.throughput(32)


def test_ttft_on_an_idle_replica_is_the_prefill():
    m = ReplicaModel(prefill_tok_s=1300.0)
    assert m.ttft_s(0, 36.6) == pytest.approx(0.028, abs=1e-3)
    assert m.ttft_s(32, 36.6) > m.ttft_s(1, 36.6)


def test_a_full_batch_model_refuses_nonsense():
    with pytest.raises(ValueError):
        ReplicaModel(full_batch_tok_s=10.0, batch1_tok_s=66.5)  # a full batch slower than one request


def test_load_within_capacity_is_served_in_its_tick_at_the_balancing_batch():
    m = ReplicaModel()
    load = Load(m)
    tokens_s = m.throughput(6)  # one replica's worth at batch 6
    step = load.step(capacity=1.0, arrivals=10, output_tokens=tokens_s * 10, tick_s=10.0)
    assert step.served == pytest.approx(10) and load.queued == 0
    assert step.batch == pytest.approx(6)
    assert load.ongoing == pytest.approx(6)


def test_overload_queues_the_excess_and_drains_it_first_in_first_out():
    m = ReplicaModel()
    full = m.throughput(m.max_num_seqs) * 10  # tokens one replica produces in a 10 s tick
    load = Load(m)
    first = load.step(capacity=1.0, arrivals=100, output_tokens=2 * full, tick_s=10.0)
    assert first.served == pytest.approx(50) and load.queued == pytest.approx(50)
    assert first.batch == m.max_num_seqs
    assert load.ongoing == pytest.approx(m.max_num_seqs + 50)
    second = load.step(capacity=1.0, arrivals=10, output_tokens=full, tick_s=10.0)
    assert second.served == pytest.approx(50)  # the older requests first; the new ones wait
    assert load.queued == pytest.approx(10)


def test_no_capacity_serves_nothing():
    load = Load(ReplicaModel())
    assert load.step(0.0, 5, 500, 10.0).served == 0 and load.queued == 5
