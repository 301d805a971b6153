"""Reserved throughput in the scheduler, over the fake runner and a fake clock: a reserved tenant's work is admitted
and run ahead of a best-effort flood up to its rate, is never preempted for it, and its covered tokens are counted;
past its rate it is best-effort, and without reservations nothing changes."""
import pytest

from tests.workers.engine.fakes import FakeRunner, fake_config
from tests.workers.engine.test_scheduler import seq
from workers.engine.block_manager import BlockManager
from workers.engine.reservations import Reservations
from workers.engine.scheduler import Scheduler
from workers.schedule_params import ScheduleParams
from tests.workers.engine.fakes import EOS


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def make(config, clock):
    runner = FakeRunner(config)
    bm = BlockManager(runner.num_kv_blocks, config.block_size)
    return Scheduler(config, bm, eos_token_ids={EOS}, max_seq_len=10_000, clock=clock), runner


def tseq(rid, tenant, *, rate=0.0, max_tokens=4, n_prompt=3):
    s = seq(rid, n_prompt, max_tokens=max_tokens, ignore_eos=True)
    s.schedule = ScheduleParams(tenant=tenant, reserved_tokens_per_s=rate)
    return s


def step(sched, runner, clock, dt):
    out = sched.schedule()
    finished = sched.update(out, runner.execute(out))
    clock.now += dt
    return out, finished


def test_bucket_refills_at_its_rate_up_to_its_burst():
    clock = Clock()
    r = Reservations(burst_s=1.0, clock=clock)
    r.arrive("a", 10.0)
    assert r.available("a", 10.0) == 10.0  # starts full
    assert r.take("a", 10.0, 25) == 10  # covers what it holds; the rest is best-effort
    assert not r.entitled("a", 10.0)
    clock.now = 0.5
    assert r.available("a", 10.0) == pytest.approx(5.0)
    clock.now = 100.0
    assert r.available("a", 10.0) == 10.0  # idle time banks no more than the burst
    assert r.available("b", 10.0) == 0.0 and r.take("nobody", 0.0, 3) == 0
    r.take("a", 10.0, 10)
    r.leave("a", 10.0)
    r.arrive("a", 10.0)  # back at once: no fresh burst
    assert r.available("a", 10.0) == 0.0
    r.leave("a", 10.0)
    clock.now = 101.0
    r.arrive("b", 10.0)  # a's bucket has refilled by now: forgotten
    assert len(r) == 1


def test_a_small_rate_still_covers_whole_tokens():
    r = Reservations(burst_s=1.0, clock=Clock())
    r.arrive("a", 0.5)
    assert r.burst(0.5) == 2.0 and r.entitled("a", 0.5)


@pytest.mark.parametrize("bad", [-1.0, True, "5", 2e9])
def test_schedule_params_refuse_a_bad_rate(bad):
    with pytest.raises(ValueError, match="reserved_tokens_per_s"):
        ScheduleParams(reserved_tokens_per_s=bad)


@pytest.mark.parametrize("policy", ["fcfs", "priority", "fair"])
def test_reserved_work_is_admitted_ahead_of_a_queued_flood(policy):
    clock = Clock()
    sched, runner = make(fake_config(max_num_seqs=2, scheduling_policy=policy), clock)
    for i in range(6):
        sched.add(tseq(f"be{i}", "flood", max_tokens=20))
    step(sched, runner, clock, 0.01)
    sched.add(tseq("res", "reserved", rate=50.0, max_tokens=4))
    out, _ = step(sched, runner, clock, 0.01)
    # The batch was full of best-effort work: the reserved request displaces one and starts at once.
    assert "res" in [s.seq.request_id for s in out.scheduled]
    assert [s.request_id for s in out.preempted] == ["be1"]


def test_reserved_work_is_never_the_victim_of_best_effort_work():
    clock = Clock()
    sched, runner = make(fake_config(max_num_seqs=2, scheduling_policy="fair", fair_preempt_margin=0), clock)
    sched.add(tseq("res", "reserved", rate=1000.0, max_tokens=30))
    sched.add(tseq("be0", "flood", max_tokens=30))
    for _ in range(5):
        step(sched, runner, clock, 0.01)
    sched.add(tseq("light", "light", max_tokens=2))  # least served: fair share would displace someone
    out, _ = step(sched, runner, clock, 0.01)
    assert [s.request_id for s in out.preempted] == ["be0"]


def test_running_reserved_work_gets_the_budget_first():
    clock = Clock()
    config = fake_config(max_num_seqs=4, max_num_batched_tokens=8, scheduling_policy="fcfs")
    sched, runner = make(config, clock)
    sched.add(tseq("be-long", "flood", max_tokens=2, n_prompt=40))
    sched.add(tseq("res", "reserved", rate=100.0, max_tokens=8, n_prompt=3))
    out, _ = step(sched, runner, clock, 0.01)
    # FCFS alone would spend the whole budget on the older long prompt; the reserved prompt goes first.
    assert out.scheduled[0].seq.request_id == "res"


class ClosedLoop:
    """Clients that each keep `concurrency` requests of `max_tokens` in the scheduler, sending the next as one ends."""

    def __init__(self, sched, tenant, concurrency, *, rate=0.0, max_tokens=16):
        self.sched, self.tenant, self.rate, self.max_tokens = sched, tenant, rate, max_tokens
        self.done, self.n = [], 0
        for _ in range(concurrency):
            self.send()

    def send(self):
        self.n += 1
        self.sched.add(tseq(f"{self.tenant}-{self.n}", self.tenant, rate=self.rate, max_tokens=self.max_tokens))

    def finished(self, seqs):
        for s in seqs:
            if s.schedule.tenant == self.tenant:
                self.done.append(s)
                self.send()


def serve(reserved_rate, seconds=30.0, dt=0.1):
    """8 slots at 0.1 s a step: 80 tokens/s in all. A reserved tenant with 3 requests in flight against a flood of
    24 from six other tenants (which arrived first); returns (tenant's tokens/s, covered tokens/s, flood's)."""
    clock = Clock()
    sched, runner = make(fake_config(max_num_seqs=8, num_kv_blocks=256, scheduling_policy="fair"), clock)
    flood = [ClosedLoop(sched, f"t{i}", 4) for i in range(6)]
    tenant = ClosedLoop(sched, "reserved", 3, rate=reserved_rate)
    for _ in range(int(seconds / dt)):
        _, finished = step(sched, runner, clock, dt)
        for client in (*flood, tenant):
            client.finished(finished)
    tokens = sum(s.num_output_tokens for s in tenant.done) / seconds
    covered = sum(s.num_reserved_tokens for s in tenant.done) / seconds
    assert all(s.num_reserved_tokens == 0 for c in flood for s in c.done)
    return tokens, covered, sum(s.num_output_tokens for c in flood for s in c.done) / seconds


def test_rate_is_honoured_under_a_flood_and_the_rest_is_best_effort():
    tokens, covered, flood = serve(20.0)
    assert tokens >= 0.95 * 20.0
    assert 0.9 * 20.0 <= covered <= 20.0 + 20.0 / 30  # the rate (plus its first burst), never more
    assert tokens + flood >= 0.95 * 80.0  # the flood keeps what the reservation does not take


def test_without_a_reservation_the_same_tenant_gets_a_fair_share_only():
    tokens, covered, _flood = serve(0.0)
    assert covered == 0
    assert tokens < 0.7 * 20.0  # a seventh of 80 tokens/s: fair share alone does not give it 20


def test_an_idle_reservation_leaves_the_whole_batch_to_best_effort():
    clock = Clock()
    sched, runner = make(fake_config(max_num_seqs=2), clock)
    for i in range(2):
        sched.add(tseq(f"be{i}", "flood", max_tokens=10))
    out, _ = step(sched, runner, clock, 0.1)
    assert len(out.scheduled) == 2
