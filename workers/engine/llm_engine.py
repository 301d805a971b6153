"""The synchronous engine: requests in, one step at a time, RequestOutputs out.

Not thread-safe: one thread drives it (the caller, or AsyncEngine's loop thread).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prometheus_client import REGISTRY, CollectorRegistry

from workers.config import EngineConfig
from workers.engine.block_manager import BlockManager
from workers.engine.input_processor import InputProcessor
from workers.engine.metrics import EngineMetrics
from workers.engine.output_processor import OutputProcessor
from workers.engine.scheduler import Scheduler
from workers.engine.scheduler_output import ModelRunnerOutput, SchedulerOutput
from workers.engine.sequence import Sequence
from workers.engine.step_meter import StepMeter
from workers.outputs import RequestOutput
from workers.sampling_params import SamplingParams
from workers.schedule_params import ScheduleParams
from workers.structured.compiler import CompileConfig, GrammarCompiler

if TYPE_CHECKING:
    from workers.engine.model_runner import ModelRunner


def _build_runner(config: EngineConfig) -> ModelRunner:
    from workers.engine.model_runner import ModelRunner  # torch and the weights: only when needed

    return ModelRunner(config)


class LLMEngine:
    def __init__(self, config: EngineConfig, runner: ModelRunner | None = None, *, deltas: bool = False,
                 model_name: str | None = None, registry: CollectorRegistry = REGISTRY) -> None:
        self.config = config
        self.runner = _build_runner(config) if runner is None else runner
        self.tokenizer = self.runner.tokenizer
        self.max_model_len = min(self.runner.max_model_len, config.max_model_len or self.runner.max_model_len)
        kv_capacity = self.runner.num_kv_blocks * config.block_size
        self.input_processor = InputProcessor(self.tokenizer, max_model_len=self.max_model_len,
                                              kv_capacity_tokens=kv_capacity, block_size=config.block_size,
                                              shared_prefixes=config.shared_prefixes,
                                              max_num_seqs=config.max_num_seqs,
                                              grammars=GrammarCompiler(self.tokenizer, CompileConfig(
                                                  timeout_s=config.grammar_compile_timeout_s,
                                                  threads=config.grammar_compile_threads)))
        self.block_manager = BlockManager(self.runner.num_kv_blocks, config.block_size,
                                          config.enable_prefix_caching)
        # A sequence may never outgrow the pool, or preempting everyone else would not save it.
        self.scheduler = Scheduler(config, self.block_manager, eos_token_ids=self.tokenizer.eos_token_ids,
                                   max_seq_len=min(self.max_model_len, kv_capacity))
        self.processor = OutputProcessor(self.tokenizer, deltas=deltas)
        self.metrics = EngineMetrics(model_name or config.model, registry)
        self.meter = StepMeter(config.meter_decode_weight)

    def add_request(self, request_id: str, prompt: str | list[int] | None = None, *,
                    messages: list[dict[str, Any]] | None = None, params: SamplingParams | None = None,
                    cache_salt: str | None = None, schedule: ScheduleParams | None = None) -> None:
        """Validate and queue a request; ValueError (naming the field) leaves the engine untouched."""
        self._check_new_id(request_id)
        seq = self.input_processor.make_sequence(request_id, prompt, messages=messages, params=params,
                                                 cache_salt=cache_salt, schedule=schedule)
        self.add_sequence(seq, prompt if isinstance(prompt, str) else None)

    def add_sequence(self, seq: Sequence, prompt: str | None = None) -> None:
        """Queue a sequence already built by input_processor (the async engine validates early)."""
        self._check_new_id(seq.request_id)
        self.scheduler.add(seq)
        self.processor.add(seq, prompt)

    def step(self) -> list[RequestOutput]:
        out = self.scheduler.schedule()
        result = self._execute(out)
        finished = self.scheduler.update(out, result)
        finished += self.scheduler.finish(self.processor.detokenize(out), "stop")
        outputs = self._metered(self.processor.make_outputs(out))
        done = self._release(finished)
        self.metrics.record_step(out, done, self.scheduler.stats())
        return outputs

    def abort(self, request_id: str) -> RequestOutput | None:
        """Stop a request (all its n completions) and free its blocks now; returns its final output
        (None if unknown)."""
        seqs = self.scheduler.abort(request_id)
        if not seqs:
            return None
        final = self.processor.abort(request_id)
        if final is not None:
            self._metered([final])
        self._release(seqs)
        return final

    def abort_all(self) -> list[RequestOutput]:
        outputs = [self.abort(request_id) for request_id in self.scheduler.request_ids()]
        return [o for o in outputs if o is not None]

    def has_unfinished_requests(self) -> bool:
        return self.scheduler.has_unfinished()

    def _execute(self, out: SchedulerOutput) -> ModelRunnerOutput:
        if not out.scheduled:
            return ModelRunnerOutput([])
        with self.meter.step(out):
            return self.runner.execute(out)

    def _metered(self, outputs: list[RequestOutput]) -> list[RequestOutput]:
        for o in outputs:
            o.engine_ms = self.meter.total(o.request_id)
        return outputs

    def _check_new_id(self, request_id: str) -> None:
        if request_id in self.scheduler:
            raise ValueError(f"request_id {request_id!r} is already in flight")

    def _release(self, seqs: list[Sequence]) -> list[Sequence]:
        """Release the runner's state of requests whose last sequence is among seqs; returns those last ones."""
        done = {seq.request_id: seq for seq in seqs if seq.request_id not in self.scheduler}
        for request_id in done:
            self.runner.release(request_id)
            self.meter.release(request_id)
        return list(done.values())
