"""Scheduling policies in the scheduler, over the fake runner: priority and per-tenant fair share decide who is
admitted and who is preempted; one tenant at one priority is scheduled exactly as FCFS."""
import pytest

from tests.workers.engine.fakes import fake_config
from tests.workers.engine.test_scheduler import make, run, seq
from workers.engine.scheduling_policy import make_policy
from workers.schedule_params import ScheduleParams


def tenant_seq(rid, tenant, n_prompt=3, max_tokens=4, priority=0):
    s = seq(rid, n_prompt, max_tokens=max_tokens)
    s.schedule = ScheduleParams(priority=priority, tenant=tenant)
    return s


def admitted_order(sched, runner, steps=10_000):
    order = []
    for _ in range(steps):
        if not sched.has_unfinished():
            return order
        out = sched.schedule()
        order += [s.seq.request_id for s in out.scheduled if s.seq.request_id not in order]
        sched.update(out, runner.execute(out))
    raise AssertionError("did not drain")


@pytest.mark.parametrize("policy", ["fcfs", "priority", "fair"])
def test_one_tenant_one_priority_is_fcfs_under_every_policy(policy):
    config = fake_config(max_num_seqs=2, scheduling_policy=policy)
    sched, runner = make(config)
    for i in range(6):
        sched.add(tenant_seq(f"r{i}", "a", max_tokens=2 + i % 3))
    assert admitted_order(sched, runner) == [f"r{i}" for i in range(6)]


def test_priority_admits_lower_numbers_first_and_displaces_a_running_lower_priority():
    config = fake_config(max_num_seqs=1, scheduling_policy="priority")
    sched, runner = make(config)
    sched.add(tenant_seq("late-low", "a", max_tokens=50, priority=5))
    out = sched.schedule()
    sched.update(out, runner.execute(out))
    sched.add(tenant_seq("normal", "a", max_tokens=2, priority=0))
    out = sched.schedule()
    assert [s.seq.request_id for s in out.scheduled] == ["normal"]
    assert [s.request_id for s in out.preempted] == ["late-low"]
    run(sched, runner)
    assert sched.block_manager.num_used_blocks == 0


def test_fair_share_lets_a_light_tenant_in_ahead_of_a_flood():
    config = fake_config(max_num_seqs=2, scheduling_policy="fair", fair_preempt_margin=1e9)
    sched, runner = make(config)
    for i in range(6):
        sched.add(tenant_seq(f"a{i}", "a", max_tokens=8))
    started = []
    for _ in range(3):
        out = sched.schedule()
        started += [s.seq.request_id for s in out.scheduled if s.seq.request_id not in started]
        sched.update(out, runner.execute(out))
    assert started == ["a0", "a1"]
    sched.add(tenant_seq("b0", "b", max_tokens=2))
    order = [r for r in admitted_order(sched, runner) if r not in started]
    # Without displacement b waits for a slot, then goes before a's queued requests.
    assert order[0] == "b0" and sorted(order[1:]) == ["a2", "a3", "a4", "a5"]


def test_fair_share_displaces_the_most_served_tenant_past_the_margin():
    config = fake_config(max_num_seqs=2, scheduling_policy="fair", fair_preempt_margin=8)
    sched, runner = make(config)
    for i in range(2):
        sched.add(tenant_seq(f"a{i}", "a", max_tokens=40))
    for _ in range(5):
        out = sched.schedule()
        sched.update(out, runner.execute(out))
    sched.add(tenant_seq("b0", "b", max_tokens=2))
    waited = 0
    while True:
        out = sched.schedule()
        if any(s.seq.request_id == "b0" for s in out.scheduled):
            break
        waited += 1
        sched.update(out, runner.execute(out))
    assert waited <= 5 and [s.schedule.tenant for s in out.preempted] == ["a"]
    sched.update(out, runner.execute(out))
    run(sched, runner)
    assert sched.block_manager.num_used_blocks == 0 and len(sched.policy.inner.share) == 0


def test_preemption_for_blocks_takes_the_policy_victim():
    config = fake_config(max_num_seqs=4, num_kv_blocks=6, scheduling_policy="priority")
    sched, runner = make(config)
    sched.add(tenant_seq("keep", "a", n_prompt=4, max_tokens=12, priority=0))
    sched.add(tenant_seq("drop", "a", n_prompt=4, max_tokens=12, priority=3))
    sched.add(tenant_seq("keep2", "a", n_prompt=4, max_tokens=12, priority=1))
    preempted = []
    while sched.has_unfinished():
        out = sched.schedule()
        preempted += [s.request_id for s in out.preempted]
        sched.update(out, runner.execute(out))
    # The lowest priority goes first, and the highest is never preempted.
    assert preempted[0] == "drop" and "keep" not in preempted
    assert sched.block_manager.num_used_blocks == 0


def test_unknown_policy():
    with pytest.raises(ValueError):
        make_policy("lottery")
    with pytest.raises(ValueError):
        fake_config(scheduling_policy="lottery")


BG = 1_000_000  # EngineConfig.background_priority's default: the gateway's Batch API lines


def ids(out):
    return [s.seq.request_id for s in out.scheduled]


@pytest.mark.parametrize("policy", ["fcfs", "priority", "fair"])
def test_background_sequences_sit_out_every_step_with_other_work(policy):
    sched, runner = make(fake_config(scheduling_policy=policy))
    sched.add(tenant_seq("bg", "batch", max_tokens=50, priority=BG))
    out = sched.schedule()
    assert ids(out) == ["bg"]  # alone, it runs
    sched.update(out, runner.execute(out))
    sched.add(tenant_seq("fg", "user", max_tokens=3))
    steps = []
    while "fg" in sched:
        out = sched.schedule()
        steps.append(ids(out))
        sched.update(out, runner.execute(out))
    assert steps == [["fg"]] * len(steps)  # the foreground request's steps carry nothing else
    assert ids(sched.schedule()) == ["bg"] and not sched.running[0].is_finished  # then it goes on, blocks kept


def test_a_waiting_background_sequence_is_not_admitted_past_the_foreground_even_first_in_line():
    sched, _runner = make(fake_config(scheduling_policy="fcfs"))
    sched.add(tenant_seq("bg", "batch", max_tokens=2, priority=BG))
    sched.add(tenant_seq("fg", "user", max_tokens=2))
    assert ids(sched.schedule()) == ["fg"]


def test_background_runs_rather_than_stall_when_nothing_else_can():
    # Two slots, both background and running; a foreground request waits for a slot under FCFS (no displacing):
    # the background sequences go on until one finishes and frees its slot.
    sched, runner = make(fake_config(scheduling_policy="fcfs", max_num_seqs=2))
    for i in range(2):
        sched.add(tenant_seq(f"bg{i}", "batch", max_tokens=3 + i, priority=BG))
    out = sched.schedule()
    sched.update(out, runner.execute(out))
    sched.add(tenant_seq("fg", "user", max_tokens=2))
    finished = run(sched, runner)
    assert {s.request_id for s in finished} == {"bg0", "bg1", "fg"}


def test_no_background_class_when_it_is_off():
    sched, runner = make(fake_config(background_priority=None))
    sched.add(tenant_seq("low", "batch", max_tokens=50, priority=BG))
    out = sched.schedule()
    sched.update(out, runner.execute(out))
    sched.add(tenant_seq("fg", "user", max_tokens=3))
    assert sorted(ids(sched.schedule())) == ["fg", "low"]
