"""A Serve replica of one model version: a workers AsyncEngine behind a streaming method.

Serve counts a replica ready once its constructor has returned and `check_health` passes; the
constructor loads the weights and runs a warm-up wave, so traffic never meets a cold engine."""
from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator

from prometheus_client import REGISTRY
from ray import serve

from workers.sampling_params import SamplingParams
from workers.serve.metrics_relay import MetricsPusher
from workers.serve.protocol import ChunkWriter, decode_request, encode, sampling_params, schedule_params


def new_engine(engine: dict, version: str):
    """The replica's engine. torch and the model code are imported here, in the replica, so a gateway builds and
    deploys VersionServer through Ray without carrying them."""
    from workers.config import EngineConfig
    from workers.engine.async_engine import AsyncEngine

    return AsyncEngine(EngineConfig(**engine), model_name=version)


class VersionServer:
    # Ray Serve awaits an async __init__ (the engine warms up before the replica takes traffic).
    async def __init__(self, version: str, engine: dict, warmup_prompt: str = "Hello",  # type: ignore[misc]
                       warmup_streams: int = 16) -> None:
        self._version = version
        self._active = 0  # generations in flight on this replica
        self._engine = new_engine(engine, version)
        await self._engine.start()
        await self._warm_up(warmup_prompt, min(warmup_streams, engine.get("max_num_seqs", warmup_streams)))
        context = serve.get_replica_context()
        self._replica = context.replica_id.unique_id if context is not None else f"local-{os.getpid()}"
        # This process's engine series (one replica per process) go to the cluster's hub, where a gateway
        # sums them over replicas: a scrape of the gateway sees the whole pool (workers/serve/metrics_relay.py).
        self._metrics = MetricsPusher(self._replica, REGISTRY)
        self._metrics.start()

    async def _warm_up(self, prompt: str, streams: int) -> None:
        """One wave as a loaded server meets it, before traffic: `streams` distinct chats at once, half greedy and
        half sampled, a few tokens each. It runs what one short prompt would not: a prefill of many rows, decode
        steps of many rows, both samplers, and the KV pages a wave writes first. (Behind a one-prompt warm-up, the
        first real wave of 16 chats once took 3.96 s to its first token, against 1.0-1.4 s for later waves:
        docs/serving.md.)"""
        async def one(i: int) -> None:
            # A distinct head per chat, so none is served from another's cached prefix.
            messages = [{"role": "user", "content": f"{i}: " + " ".join([prompt] * 24)}]
            params = SamplingParams(max_tokens=4, temperature=0 if i % 2 == 0 else 1.0, ignore_eos=True)
            async for _ in self._engine.generate(f"warmup-{i}-{uuid.uuid4().hex}", messages=messages, params=params):
                pass

        await asyncio.gather(*(one(i) for i in range(streams)))

    def info(self) -> dict:
        """What the gateway needs to validate and count prompts locally, and who answered."""
        ip = self._engine._engine.input_processor  # AsyncEngine exposes no KV capacity of its own
        return {"version": self._version, "replica": self._replica, "pid": os.getpid(),
                "max_model_len": self._engine.max_model_len, "kv_capacity_tokens": ip.kv_capacity_tokens,
                "block_size": ip.block_size, "active": self._active}

    async def generate(self, data: bytes, prefix_key: str | None = None) -> AsyncIterator[bytes]:
        """A msgpack protocol.Request in, msgpack protocol.Chunks out (workers/serve/protocol.py); the first
        chunk names `version` and `replica`. When the caller cancels, closing the engine stream aborts the
        request (all n completions). `prefix_key` is read by the prefix-affinity request router, not here."""
        request = decode_request(data)
        params, schedule = sampling_params(request), schedule_params(request)
        # A fresh id per attempt: a retry may reach this replica while the last one still aborts.
        rid = f"{request.request_id}-{uuid.uuid4().hex[:8]}"
        outputs = self._engine.generate(rid, request.prompt, messages=request.messages, params=params,
                                        cache_salt=request.cache_salt, schedule=schedule)
        first = True
        write = ChunkWriter()
        self._active += 1
        try:
            async for out in outputs:
                chunk = write(out)
                if first:
                    chunk.version, chunk.replica = self._version, self._replica
                    first = False
                yield encode(chunk)
        finally:
            self._active -= 1
            await outputs.aclose()

    def check_health(self) -> None:
        if not self._engine.is_running:
            raise RuntimeError(f"{self._version}: the engine loop is not running")

    async def __del__(self) -> None:
        await self._metrics.stop()
        await self._engine.stop()
