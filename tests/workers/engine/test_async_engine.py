"""AsyncEngine: the step loop in a thread, delta streams, aborts, failures."""
import asyncio
import time

import pytest
from prometheus_client import CollectorRegistry

from tests.cores import torch_threads
from tests.workers.engine.fakes import FakeRunner, fake_config
from workers import LLM, SamplingParams
from workers.engine.async_engine import AsyncEngine
from workers.engine.errors import EngineDeadError

GREEDY = SamplingParams(max_tokens=8, temperature=0)
LONG = SamplingParams(max_tokens=400, temperature=0, ignore_eos=True)


def make(runner_kw=None, **cfg):
    config = fake_config(**cfg)
    return AsyncEngine(config, FakeRunner(config, **(runner_kw or {})), registry=CollectorRegistry())


async def collect(engine, rid, prompt=None, **kw):
    return [o async for o in engine.generate(rid, prompt, **kw)]


async def wait_for(predicate, timeout_s=5.0):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.005)


def no_leaks(engine):
    bm = engine._engine.block_manager
    return bm.num_free_blocks == bm.num_blocks and not engine._engine.has_unfinished_requests()


async def test_concurrent_streams_concatenate_to_the_offline_result():
    engine = make()
    await engine.start()
    prompts = [f"prompt {i} é" for i in range(5)]
    streams = await asyncio.gather(*(collect(engine, f"r{i}", p, params=GREEDY) for i, p in enumerate(prompts)))
    config = fake_config()
    offline = LLM("fake", runner=FakeRunner(config), block_size=4, num_kv_blocks=64).generate(prompts, GREEDY)
    for outs, ref in zip(streams, offline):
        assert outs[-1].finished and all(not o.finished for o in outs[:-1])
        assert "".join(o.outputs[0].text for o in outs) == ref.outputs[0].text
        assert [t for o in outs for t in o.outputs[0].token_ids] == ref.outputs[0].token_ids
        counts = [o.num_output_tokens for o in outs]  # cumulative, even when deltas were merged
        assert counts == sorted(set(counts)) and counts[-1] == 8
        assert counts == [sum(len(o.outputs[0].token_ids) for o in outs[:i + 1]) for i in range(len(outs))]
        assert outs[-1].outputs[0].finish_reason == "length"
    await wait_for(lambda: no_leaks(engine))
    await engine.stop()


async def test_stop_strings_stream_without_leaking_the_partial_match():
    engine = make(runner_kw={"reply": "ab€cd</sto</stop>tail".encode()})
    outs = await collect(engine, "s", "q", params=SamplingParams(max_tokens=40, stop=["</stop>"]))
    text = "".join(o.outputs[0].text for o in outs)
    assert text == "ab€cd</sto" and outs[-1].outputs[0].finish_reason == "stop"
    assert all("\ufffd" not in o.outputs[0].text for o in outs)
    await engine.stop()


async def test_validation_errors_raise_on_first_anext_before_anything_is_queued():
    engine = make()
    with pytest.raises(ValueError, match="prompt"):
        await engine.generate("bad", "").__anext__()
    with pytest.raises(ValueError, match="messages"):
        await engine.generate("bad", messages=[]).__anext__()
    assert engine._commands == [] and engine._streams == {}
    outs = await collect(engine, "good", "fine", params=GREEDY)
    assert outs[-1].finished
    await engine.stop()


async def test_duplicate_in_flight_request_id_is_refused():
    engine = make(runner_kw={"step_delay": 0.002})
    first = engine.generate("dup", "abc", params=LONG)
    await first.__anext__()
    with pytest.raises(ValueError, match="request_id"):
        await engine.generate("dup", "abc").__anext__()
    await first.aclose()
    await engine.stop()


async def test_aclose_by_the_consumer_aborts_and_frees_blocks():
    engine = make(runner_kw={"step_delay": 0.002})
    gen = engine.generate("gone", "a prompt that takes blocks", params=LONG)
    await gen.__anext__()
    assert engine._engine.block_manager.num_used_blocks > 0
    await gen.aclose()
    await wait_for(lambda: no_leaks(engine))
    assert "gone" in engine._engine.runner.released
    await engine.stop()


async def test_cancelling_the_consumer_task_aborts_the_request():
    engine = make(runner_kw={"step_delay": 0.002})
    started = asyncio.Event()

    async def consume():
        async for _ in engine.generate("c", "cancel me please", params=LONG):
            started.set()

    task = asyncio.create_task(consume())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await wait_for(lambda: no_leaks(engine))
    await engine.stop()


async def test_abort_frees_blocks_before_it_returns_and_ends_the_stream():
    engine = make(runner_kw={"step_delay": 0.002})
    gen = engine.generate("a", "abort me", params=LONG)
    await gen.__anext__()
    await engine.abort("a")
    assert engine._engine.block_manager.num_used_blocks == 0
    rest = [o async for o in gen]
    assert rest[-1].finished and rest[-1].outputs[0].finish_reason == "abort"
    await engine.abort("unknown")
    await engine.stop()


async def test_the_event_loop_is_not_blocked_while_the_engine_steps():
    engine = make(runner_kw={"step_delay": 0.01})
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.002)
            ticks += 1

    t = asyncio.create_task(ticker())
    started = time.monotonic()
    await collect(engine, "slow", "x", params=SamplingParams(max_tokens=20, temperature=0))
    elapsed = time.monotonic() - started
    t.cancel()
    assert elapsed >= 0.2  # 20+ steps of 10 ms ran...
    assert ticks >= 20  # ...while the loop kept ticking
    await engine.stop()


async def test_idle_loop_thread_sleeps_instead_of_spinning():
    engine = make()
    await engine.start()
    await asyncio.sleep(0.05)
    assert engine._engine.runner.steps == []  # no empty steps were run while idle
    assert engine.is_running
    await engine.stop()
    assert not engine.is_running


async def test_a_failing_loop_fails_waiters_and_marks_unhealthy():
    engine = make(runner_kw={"fail_at_step": 3})
    results = await asyncio.gather(*(collect(engine, f"f{i}", "boom", params=LONG) for i in range(3)),
                                   return_exceptions=True)
    assert all(isinstance(r, EngineDeadError) for r in results)
    assert not engine.is_healthy
    with pytest.raises(EngineDeadError):
        await engine.generate("late", "x").__anext__()
    await engine.abort("f0")  # does not hang
    await engine.stop()


async def test_stop_fails_in_flight_requests_and_frees_everything():
    engine = make(runner_kw={"step_delay": 0.002})
    gen = engine.generate("s", "still running", params=LONG)
    await gen.__anext__()
    await engine.stop()
    with pytest.raises(EngineDeadError):
        async for _ in gen:
            pass
    assert engine._engine.block_manager.num_used_blocks == 0


async def test_count_prompt_tokens_and_exposed_properties():
    engine = make()
    assert engine.count_prompt_tokens(prompt="héllo") == 6
    assert engine.count_prompt_tokens(messages=[{"role": "user", "content": "hi"}]) == len(b"<user>hi\n<assistant>")
    with pytest.raises(ValueError, match="prompt"):
        engine.count_prompt_tokens()
    with pytest.raises(ValueError, match="messages"):
        engine.count_prompt_tokens(messages=[{"role": "user"}])
    assert engine.max_model_len == 512 and engine.config.block_size == 4 == engine.block_size
    assert engine.kv_capacity_tokens == 64 * 4
    assert engine.tokenizer.decode([104, 105]) == "hi"
    assert engine.is_healthy


async def test_a_slow_consumer_gets_merged_deltas_that_still_concatenate():
    engine = make()
    gen = engine.generate("slow", "prompt", params=SamplingParams(max_tokens=30, temperature=0))
    outs = [await gen.__anext__()]
    await wait_for(lambda: not engine._engine.has_unfinished_requests())  # everything is queued now
    outs += [o async for o in gen]
    config = fake_config()
    ref = LLM("fake", runner=FakeRunner(config), block_size=4, num_kv_blocks=64).generate(
        "prompt", SamplingParams(max_tokens=30, temperature=0))[0]
    # Whatever queued while the consumer slept arrives as one merged delta (the first one may
    # already hold everything when the loop thread outran the consumer).
    assert len(outs) <= 2 and outs[-1].finished and outs[-1].num_output_tokens == 30
    assert "".join(o.outputs[0].text for o in outs) == ref.outputs[0].text
    assert [t for o in outs for t in o.outputs[0].token_ids] == ref.outputs[0].token_ids
    await engine.stop()


async def test_waiting_requests_are_capped_per_tenant_and_per_replica():
    from workers.engine.errors import EngineOverloaded

    # One batch slot: everything after the first request waits.
    engine = make(runner_kw={"step_delay": 0.01}, max_num_seqs=1, max_waiting_requests=3, max_waiting_per_tenant=2)
    await engine.start()
    scheduler = engine._engine.scheduler
    streams, firsts = [], []

    async def submit(rid, salt):
        stream = engine.generate(rid, "p", params=LONG, cache_salt=salt)
        streams.append(stream)
        firsts.append(asyncio.ensure_future(anext(stream)))
        await asyncio.sleep(0)  # let the generator run up to its first await: it is submitted

    await submit("a0", "tenant-a")
    await wait_for(lambda: len(scheduler.running) == 1)  # a0 holds the only slot
    await submit("a1", "tenant-a")
    await submit("a2", "tenant-a")
    await wait_for(lambda: len(scheduler.waiting) == 2)
    with pytest.raises(EngineOverloaded) as refused:
        await anext(engine.generate("a3", "p", params=LONG, cache_salt="tenant-a"))
    assert refused.value.scope == "tenant"
    await submit("b0", "tenant-b")  # another tenant still gets in
    await wait_for(lambda: len(scheduler.waiting) == 3)
    with pytest.raises(EngineOverloaded) as full:
        await anext(engine.generate("c0", "p", params=LONG, cache_salt="tenant-c"))
    assert full.value.scope == "replica"
    for f in firsts:
        f.cancel()
    await asyncio.gather(*firsts, return_exceptions=True)  # a cancelled first read aborts its request
    for s in streams:
        await s.aclose()
    await wait_for(lambda: no_leaks(engine))
    assert engine._engine.scheduler.waiting_by_salt == {}  # counters drain with the queue
    # Room again: a new request of tenant-a is admitted and runs.
    outs = await collect(engine, "a4", "p", params=GREEDY, cache_salt="tenant-a")
    assert outs[-1].finished
    await engine.stop()


def test_overloaded_survives_pickling_for_ray():
    import pickle

    from workers.engine.errors import EngineOverloaded

    again = pickle.loads(pickle.dumps(EngineOverloaded("too many", "tenant")))
    assert again.scope == "tenant" and str(again) == "too many"


async def test_n_completions_stream_per_index_deltas_that_add_up_to_the_offline_result():
    engine = make(runner_kw={"step_delay": 0.001})
    params = SamplingParams(n=3, max_tokens=12, temperature=1.0, seed=8, stop=["a"], logprobs=1)
    outs = await collect(engine, "n", "parallel prompt", params=params)
    config = fake_config()
    offline = LLM("fake", runner=FakeRunner(config), block_size=4, num_kv_blocks=64).generate("parallel prompt",
                                                                                              params)[0]
    assert outs[-1].finished and not any(o.finished for o in outs[:-1])
    for ref in offline.outputs:
        deltas = [c for o in outs for c in o.outputs if c.index == ref.index]
        assert "".join(c.text for c in deltas) == ref.text
        assert [t for c in deltas for t in c.token_ids] == ref.token_ids
        assert [lp for c in deltas for lp in c.logprobs] == ref.logprobs
        assert [c.finish_reason for c in deltas if c.finish_reason] == [ref.finish_reason]  # once, at its end
        assert deltas[-1].finish_reason and deltas[-1].cumulative_logprob == pytest.approx(ref.cumulative_logprob)
    counts = [o.num_output_tokens for o in outs]  # cumulative, summed over the completions
    assert counts == sorted(counts) and counts[-1] == offline.num_output_tokens
    await wait_for(lambda: no_leaks(engine))
    await engine.stop()


async def test_leaving_an_n_request_early_frees_all_its_blocks():
    engine = make(runner_kw={"step_delay": 0.002})
    gen = engine.generate("n", "a prompt that takes blocks", params=SamplingParams(n=4, max_tokens=400,
                                                                                   temperature=0, ignore_eos=True))
    await gen.__anext__()
    await gen.__anext__()
    assert len(engine._engine.scheduler.running) == 4
    await gen.aclose()
    await wait_for(lambda: no_leaks(engine))
    await engine.stop()


class ThreadCountingRunner(FakeRunner):
    """Records the OpenMP thread count each step runs under (what the C kernels' parallel regions get)."""

    def __init__(self, config, **kw) -> None:
        super().__init__(config, **kw)
        import ctypes

        self._omp = ctypes.CDLL("libgomp.so.1")
        self.omp_threads: set[int] = set()

    def execute(self, out):
        self.omp_threads.add(self._omp.omp_get_max_threads())
        return super().execute(out)


async def test_the_engine_thread_runs_kernels_with_torchs_thread_count():
    import threading


    config = fake_config()
    runner = ThreadCountingRunner(config)
    fresh: list[int] = []  # what a new thread starts with (OMP_NUM_THREADS, or the cores)
    t = threading.Thread(target=lambda: fresh.append(runner._omp.omp_get_max_threads()))
    t.start()
    t.join()
    wanted = 1 if fresh[0] > 1 else 2  # unlike a fresh thread's, so only carrying it over can pass
    with torch_threads(wanted):
        engine = AsyncEngine(config, runner, registry=CollectorRegistry())
        try:
            await collect(engine, "r", "hello", params=SamplingParams(max_tokens=2))
        finally:
            await engine.stop()
    # A new thread starts with OMP_NUM_THREADS's count (1 in a Ray replica); the engine's carries torch's.
    assert runner.omp_threads == {wanted}
