"""The policy layer alone: a Scheduler over a BlockManager, driven by the fake runner."""
import pytest

from tests.workers.engine.fakes import EOS, FakeRunner, fake_config, next_printable
from workers.engine.block_manager import BlockManager
from workers.engine.scheduler import Scheduler
from workers.engine.scheduler_output import ModelRunnerOutput
from workers.engine.sequence import Sequence, SequenceStatus
from workers.sampling_params import SamplingParams


def make(config, **kw):
    runner = FakeRunner(config)
    bm = BlockManager(runner.num_kv_blocks, config.block_size)
    return Scheduler(config, bm, eos_token_ids={EOS}, max_seq_len=kw.get("max_seq_len", 10_000)), runner


def seq(rid, n_prompt, max_tokens=4, start=1, **params):
    tokens = [(start + i) % 200 + 32 for i in range(n_prompt)]
    return Sequence(rid, tokens, n_prompt, SamplingParams(max_tokens=max_tokens, temperature=0, **params), 4)


def run(sched, runner, max_steps=10_000):
    finished = []
    for _ in range(max_steps):
        if not sched.has_unfinished():
            return finished
        out = sched.schedule()
        finished += sched.update(out, runner.execute(out))
    raise AssertionError("scheduler did not drain")


def test_chunked_prefill_respects_the_token_budget():
    config = fake_config(max_num_batched_tokens=8)
    sched, runner = make(config)
    s = seq("long", 30, max_tokens=2)
    sched.add(s)
    run(sched, runner)
    assert max(runner.batch_tokens) <= 8
    assert runner.batch_tokens[:4] == [8, 8, 8, 6]  # the prompt in four chunks, sampling on the last
    assert s.finish_reason == "length" and s.num_output_tokens == 2


def test_decodes_go_first_and_share_the_budget_with_a_new_prompt_chunk():
    config = fake_config(max_num_batched_tokens=6)
    sched, runner = make(config)
    a = seq("a", 3, max_tokens=5)
    sched.add(a)
    out = sched.schedule()
    sched.update(out, runner.execute(out))
    sched.add(seq("b", 20, max_tokens=1))
    out = sched.schedule()
    assert [(s.seq.request_id, s.num_new_tokens) for s in out.scheduled] == [("a", 1), ("b", 5)]
    assert out.scheduled[0].samples and not out.scheduled[1].samples


def test_max_num_seqs_is_respected_and_finished_slots_refill_next_step():
    config = fake_config(max_num_seqs=2)
    sched, runner = make(config)
    seqs = [seq(f"r{i}", 3, max_tokens=1 + i) for i in range(5)]
    for s in seqs:
        sched.add(s)
    out = sched.schedule()
    assert len(out.scheduled) == 2
    sched.update(out, runner.execute(out))  # r0 is done after one token
    assert [s.request_id for s in sched.running] == ["r1"]
    out = sched.schedule()
    assert [s.seq.request_id for s in out.scheduled] == ["r1", "r2"]
    sched.update(out, runner.execute(out))
    run(sched, runner)
    assert max(runner.batch_seqs) <= 2
    assert all(s.is_finished for s in seqs)


def test_stop_token_ids_stop():
    sched, runner = make(fake_config())
    probe = seq("tok", 3, max_tokens=100)
    second = next_printable(next_printable(probe.token_ids[-1]))
    s = seq("tok", 3, max_tokens=100, stop_token_ids=[second])
    sched.add(s)
    run(sched, runner)
    assert s.finish_reason == "stop" and s.num_output_tokens == 2 and s.output_token_ids[-1] == second


def test_eos_stops_unless_ignored():
    config = fake_config()
    for ignore, expected in ((False, ("stop", 1)), (True, ("length", 3))):
        sched, _ = make(config)
        runner = FakeRunner(config, reply=b"")  # eos straight away
        s = seq("e", 3, max_tokens=3, ignore_eos=ignore)
        sched.add(s)
        run(sched, runner)
        assert (s.finish_reason, s.num_output_tokens) == expected
        assert s.output_token_ids[0] == EOS


def test_max_seq_len_finishes_with_length():
    sched, runner = make(fake_config(), max_seq_len=6)
    s = seq("m", 3, max_tokens=100)
    sched.add(s)
    run(sched, runner)
    assert s.finish_reason == "length" and s.num_tokens == 6


def test_prefix_hit_recorded_on_first_schedule():
    sched, runner = make(fake_config())
    a = seq("a", 13, max_tokens=1)
    sched.add(a)
    run(sched, runner)
    b = seq("b", 13, max_tokens=1)
    sched.add(b)
    out = sched.schedule()
    assert b.num_cached_tokens == 12 and out.scheduled[0].start == 12 and out.scheduled[0].num_new_tokens == 1
    sched.update(out, runner.execute(out))
    assert b.output_token_ids == a.output_token_ids


def test_preemption_under_a_small_pool_matches_the_unconstrained_run():
    def outputs(num_blocks):
        config = fake_config(num_kv_blocks=num_blocks, max_num_batched_tokens=16)
        sched, runner = make(config)
        seqs = [seq(f"r{i}", 5 + i, max_tokens=12, start=i * 3) for i in range(6)]
        for s in seqs:
            sched.add(s)
        preempted = 0
        while sched.has_unfinished():
            out = sched.schedule()
            preempted += len(out.preempted)
            sched.update(out, runner.execute(out))
        assert sched.block_manager.num_used_blocks == 0
        assert all(b.ref_count == 0 for b in sched.block_manager.blocks)
        return {s.request_id: s.output_token_ids for s in seqs}, preempted

    free_run, none = outputs(64)
    tight_run, some = outputs(8)  # the longest sequence alone needs 5 blocks
    assert none == 0 and some > 0
    assert tight_run == free_run


def test_preemption_takes_the_newest_and_requeues_it_first():
    config = fake_config(num_kv_blocks=4, max_num_batched_tokens=64)
    sched, runner = make(config)
    old, new = seq("old", 7, max_tokens=20), seq("new", 7, max_tokens=20, start=50)
    sched.add(old)
    sched.add(new)
    while True:
        out = sched.schedule()
        if out.preempted:
            break
        sched.update(out, runner.execute(out))
    assert out.preempted == [new]
    assert new.status is SequenceStatus.WAITING and new.num_computed_tokens == 0 and new.block_table == []
    assert new.num_output_tokens > 0  # generated tokens are kept for the recompute
    assert sched.waiting[0] is new and [s.seq for s in out.scheduled] == [old]


def test_abort_frees_blocks_at_once_from_running_or_waiting():
    config = fake_config(max_num_seqs=1)
    sched, runner = make(config)
    a, b = seq("a", 9), seq("b", 9)
    sched.add(a)
    sched.add(b)
    out = sched.schedule()
    sched.update(out, runner.execute(out))
    assert sched.block_manager.num_used_blocks > 0
    assert sched.abort("a") == [a] and a.finish_reason == "abort"
    assert sched.block_manager.num_used_blocks == 0
    assert sched.abort("b") == [b] and not sched.has_unfinished()
    assert sched.abort("nope") == []


def test_duplicate_request_id_is_refused():
    sched, _ = make(fake_config())
    sched.add(seq("x", 3))
    with pytest.raises(ValueError, match="request_id"):
        sched.add(seq("x", 3))


def test_runner_returning_the_wrong_count_is_an_error():
    sched, _ = make(fake_config())
    sched.add(seq("x", 3))
    out = sched.schedule()
    with pytest.raises(RuntimeError, match="results"):
        sched.update(out, ModelRunnerOutput([]))


def test_the_first_sample_of_an_n_request_forks_children_sharing_its_blocks():
    sched, runner = make(fake_config())
    parent = seq("p", 6, max_tokens=3, n=3)
    sched.add(parent)
    out = sched.schedule()
    assert [s.num_samples for s in out.scheduled] == [3]
    sched.update(out, runner.execute(out))
    children = out.forked
    assert [c.index for c in children] == [1, 2] and sched.running == [parent, *children]
    assert all(c.block_table == parent.block_table and c.num_computed_tokens == 6 for c in children)
    assert all(c.num_output_tokens == 1 for c in [parent, *children])
    bm = sched.block_manager
    assert [bm.blocks[b].ref_count for b in parent.block_table] == [3, 3]
    out = sched.schedule()  # every one writes into the shared partial block: two copy it first
    assert [s.num_samples for s in out.scheduled] == [1, 1, 1] and len(out.blocks_to_copy) == 2
    sched.update(out, runner.execute(out))
    assert len({s.block_table[1] for s in [parent, *children]}) == 3
    run(sched, runner)
    assert "p" not in sched and bm.num_used_blocks == 0


def test_a_preempted_child_recomputes_on_its_own():
    sched, runner = make(fake_config(num_kv_blocks=5, max_num_batched_tokens=64))
    parent = seq("p", 6, max_tokens=8, n=3)
    sched.add(parent)
    preempted = []
    for _ in range(100):
        if not sched.has_unfinished():
            break
        out = sched.schedule()
        preempted += out.preempted
        sched.update(out, runner.execute(out))
    assert preempted and not sched.has_unfinished()  # the fake runner checked every KV slot read
    assert sched.block_manager.num_used_blocks == 0


def test_min_tokens_keeps_stop_tokens_from_ending_the_output():
    sched, _ = make(fake_config())
    s = seq("m", 3, max_tokens=5, min_tokens=2)
    sched.add(s)
    out = sched.schedule()
    sched.update(out, ModelRunnerOutput([[EOS]]))  # a runner that did not mask: the scheduler holds on
    assert not s.is_finished
    out = sched.schedule()
    sched.update(out, ModelRunnerOutput([[EOS]]))
    assert not s.is_finished  # two out: not more than min_tokens yet
    out = sched.schedule()
    sched.update(out, ModelRunnerOutput([[EOS]]))
    assert s.finish_reason == "stop"


def test_n_larger_than_the_batch_is_refused():
    sched, _ = make(fake_config(max_num_seqs=2))
    with pytest.raises(ValueError, match="max_num_seqs"):
        sched.add(seq("x", 3, n=3))
