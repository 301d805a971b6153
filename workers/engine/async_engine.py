"""The engine for asyncio servers: the step loop runs in its own thread.

Threading model: only the loop thread touches the LLMEngine. The event loop validates requests
(InputProcessor is stateless), then hands adds and aborts over through a command list guarded
by a condition; the loop thread sleeps on that condition when it has nothing to do. Outputs come
back with `call_soon_threadsafe` into one asyncio.Queue per request.
"""
from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from prometheus_client import REGISTRY, CollectorRegistry

from workers.config import EngineConfig
from workers.engine.errors import EngineDeadError, EngineOverloaded
from workers.engine.llm_engine import LLMEngine
from workers.engine.sequence import Sequence
from workers.outputs import RequestOutput
from workers.sampling_params import SamplingParams
from workers.schedule_params import ScheduleParams

if TYPE_CHECKING:
    from workers.engine.input_processor import InputProcessor
    from workers.engine.model_runner import ModelRunner
    from workers.model.tokenizer import Tokenizer


# What a request's stream carries: its outputs, or the error that ends it.
_Item = RequestOutput | BaseException


@dataclass(slots=True)
class _Add:
    seq: Sequence
    prompt: str | None


@dataclass(slots=True)
class _Abort:
    request_id: str
    done: asyncio.Future[None] | None  # resolved once the blocks are free


class AsyncEngine:
    def __init__(self, config: EngineConfig, runner: ModelRunner | None = None, *, model_name: str | None = None,
                 registry: CollectorRegistry = REGISTRY) -> None:
        name = model_name or f"{config.model}@{config.dtype}"
        self._engine = LLMEngine(config, runner, deltas=True, model_name=name, registry=registry)
        self._cond = threading.Condition()
        self._commands: list[_Add | _Abort] = []  # guarded by _cond
        self._pending_adds: Counter[str | None] = Counter()  # adds in _commands per cache salt; guarded by _cond
        self._stopping = False  # guarded by _cond
        self._streams: dict[str, asyncio.Queue[_Item]] = {}  # event-loop thread only
        self._abort_waiters: set[asyncio.Future[None]] = set()  # event-loop thread only
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    @property
    def config(self) -> EngineConfig:
        return self._engine.config

    @property
    def tokenizer(self) -> Tokenizer:
        return self._engine.tokenizer

    @property
    def max_model_len(self) -> int:
        return self._engine.max_model_len

    @property
    def kv_capacity_tokens(self) -> int:
        """Tokens the whole KV pool holds: no prompt longer than this is accepted."""
        return self._engine.input_processor.kv_capacity_tokens

    @property
    def block_size(self) -> int:
        return self._engine.config.block_size

    @property
    def is_healthy(self) -> bool:
        return self._error is None

    @property
    def is_running(self) -> bool:
        return self.is_healthy and self._thread is not None and self._thread.is_alive()

    @property
    def inputs(self) -> InputProcessor:
        """The engine's InputProcessor: stateless (tokenizer and limits), safe to call on the event loop."""
        return self._engine.input_processor

    def count_prompt_tokens(self, prompt: str | list[int] | None = None,
                            messages: list[dict[str, Any]] | None = None) -> int:
        """Tokens the prompt (or chat-templated messages) takes; ValueError on bad input."""
        return len(self._engine.input_processor.tokenize(prompt, messages))

    async def start(self) -> None:
        if self._thread is not None:
            return
        self._loop = asyncio.get_running_loop()
        if self._engine.input_processor.grammars is not None:
            self._engine.input_processor.grammars.warm()
        with self._cond:
            self._stopping = False
        self._thread = threading.Thread(target=self._run, name="tollgate-engine", daemon=True)
        self._thread.start()

    async def stop(self) -> None:
        """Abort everything in flight (waiters get EngineDeadError) and join the loop thread."""
        if self._thread is None:
            return
        with self._cond:
            self._stopping = True
            self._cond.notify()
        await asyncio.to_thread(self._thread.join)
        self._thread = None
        self._fail_streams(EngineDeadError("engine stopped"))

    async def generate(self, request_id: str, prompt: str | list[int] | None = None, *,
                       messages: list[dict[str, Any]] | None = None, params: SamplingParams | None = None,
                       cache_salt: str | None = None,
                       schedule: ScheduleParams | None = None) -> AsyncGenerator[RequestOutput, None]:
        """Stream delta outputs. Bad input raises ValueError before anything is queued; leaving
        early (aclose, cancellation, a dropped client) aborts the request and frees its blocks.
        `cache_salt` confines prefix-cache reuse to requests carrying the same salt; `schedule` is the
        request's priority and fair-share tenant."""
        inputs = self._engine.input_processor
        grammar = await inputs.compile_grammar(params)  # off this loop, bounded (workers.structured.compiler)
        seq = inputs.make_sequence(request_id, prompt, messages=messages, params=params, cache_salt=cache_salt,
                                   schedule=schedule, grammar=grammar)
        if request_id in self._streams:
            raise ValueError(f"request_id {request_id!r} is already in flight")
        await self.start()
        if self._error is not None:
            raise EngineDeadError("engine loop failed") from self._error
        queue: asyncio.Queue[_Item] = asyncio.Queue()
        self._submit(_Add(seq, prompt if isinstance(prompt, str) else None), admit=True)
        self._streams[request_id] = queue
        finished = False
        try:
            while not finished:
                item = _take_merged(await queue.get(), queue)
                if isinstance(item, BaseException):
                    finished = True
                    raise item
                finished = item.finished
                yield item
        finally:
            if self._streams.get(request_id) is queue:
                del self._streams[request_id]
            if not finished:
                self._submit(_Abort(request_id, None))

    async def abort(self, request_id: str) -> None:
        """Abort a request; when this returns its KV blocks are back in the pool."""
        if not self.is_running:
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._abort_waiters.add(done)
        try:
            self._submit(_Abort(request_id, done))
            await done
        finally:
            self._abort_waiters.discard(done)

    def _submit(self, command: _Add | _Abort, *, admit: bool = False) -> None:
        with self._cond:
            if admit and isinstance(command, _Add):
                self._check_room(command.seq)
                self._pending_adds[command.seq.cache_salt] += 1
            self._commands.append(command)
            self._cond.notify()

    def _check_room(self, seq: Sequence) -> None:
        """Admission, under _cond: waiting = queued in the scheduler (read from the engine thread's counters,
        a benign race) plus adds not yet handed to it. Raises EngineOverloaded, queueing nothing. A tenant's
        reserved work is not refused for others' load (the replica's queue): it runs ahead of that queue."""
        config, scheduler, salt = self._engine.config, self._engine.scheduler, seq.cache_salt
        limit = config.max_waiting_requests
        waiting = len(scheduler.waiting) + sum(self._pending_adds.values())
        if limit is not None and seq.schedule.reserved_tokens_per_s <= 0 and waiting >= limit:
            raise EngineOverloaded(f"{limit} requests already wait on this replica", "replica")
        limit = config.max_waiting_per_tenant
        if limit is not None and salt is not None and \
                scheduler.waiting_by_salt.get(salt, 0) + self._pending_adds[salt] >= limit:
            raise EngineOverloaded(f"{limit} of this tenant's requests already wait on this replica", "tenant")

    # ---- the loop thread -------------------------------------------------------------

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        """The loop start() ran on, which the engine thread hands its results to."""
        assert self._loop is not None  # set by start() before the engine thread exists
        return self._loop

    def _run(self) -> None:
        # OpenMP's thread count is per thread: carry torch's (EngineConfig.num_threads, or its default) into this
        # one, or the C kernels the steps run fall back to OMP_NUM_THREADS here (1 in a Ray replica).
        torch.set_num_threads(torch.get_num_threads())
        try:
            while (commands := self._next_commands()) is not None:
                for command in commands:
                    self._apply(command)
                if self._engine.has_unfinished_requests():
                    self._deliver(self._engine.step())
        except Exception as exc:  # reported to every waiter, never dropped
            self._error = exc
            self._event_loop().call_soon_threadsafe(self._fail_streams, EngineDeadError(f"engine loop failed: {exc!r}"))
        finally:
            self._drain()

    def _next_commands(self) -> list[_Add | _Abort] | None:
        """Commands to apply, after sleeping while idle; None once stopping."""
        with self._cond:
            while not (self._stopping or self._commands or self._engine.has_unfinished_requests()):
                self._cond.wait()
            if self._stopping:
                return None
            commands, self._commands = self._commands, []
            self._pending_adds.clear()  # handed to the scheduler below: its own counters take over
            return commands

    def _apply(self, command: _Add | _Abort) -> None:
        if isinstance(command, _Abort):
            final = self._engine.abort(command.request_id)
            self._deliver([final] if final is not None else [], command.done)
            return
        try:
            self._engine.add_sequence(command.seq, command.prompt)
        except ValueError as exc:  # this request is refused; the others carry on
            self._deliver([], None, (command.seq.request_id, exc))

    def _deliver(self, outputs: list[RequestOutput], done: asyncio.Future[None] | None = None,
                 error: tuple[str, BaseException] | None = None) -> None:
        if outputs or done is not None or error is not None:
            self._event_loop().call_soon_threadsafe(self._dispatch, outputs, done, error)

    def _drain(self) -> None:
        """On the way out: free every request's blocks and settle pending aborts."""
        with self._cond:
            commands, self._commands = self._commands, []
            self._pending_adds.clear()
        self._engine.abort_all()
        for command in commands:
            if isinstance(command, _Abort) and command.done is not None:
                self._event_loop().call_soon_threadsafe(_settle, command.done)

    # ---- the event loop thread --------------------------------------------------------

    def _dispatch(self, outputs: list[RequestOutput], done: asyncio.Future[None] | None,
                  error: tuple[str, BaseException] | None) -> None:
        for out in outputs:
            queue = self._streams.get(out.request_id)
            if queue is not None:
                queue.put_nowait(out)
        if error is not None and error[0] in self._streams:
            self._streams[error[0]].put_nowait(error[1])
        if done is not None:
            _settle(done)

    def _fail_streams(self, exc: BaseException) -> None:
        for queue in self._streams.values():
            queue.put_nowait(exc)
        for done in self._abort_waiters:  # a dead loop has nothing left to free
            _settle(done)


def _settle(done: asyncio.Future[None]) -> None:
    if not done.done():
        done.set_result(None)


def _take_merged(item: _Item, queue: asyncio.Queue[_Item]) -> _Item:
    """Fold the deltas that piled up behind `item` while the consumer was busy; stop at an error."""
    while isinstance(item, RequestOutput) and not item.finished and not queue.empty():
        nxt = queue.get_nowait()
        if isinstance(nxt, BaseException):
            return nxt
        item = item.merge_delta(nxt)
    return item

