"""The serving interface over a Ray Serve pool: one Serve application per model version.

Errors before the first chunk are BackendErrors (the gateway tries a fallback): no ready replica
-> VersionUnavailable; the handle's queue is full or no first chunk within the timeout ->
VersionOverloaded. After the first chunk a lost replica ends the stream with ReplicaLost (a
GenerationFailed that says how many tokens were delivered, for billing)."""
from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterator

import ray
from prometheus_client import REGISTRY
from ray import serve
from ray.exceptions import RayError, RayTaskError
from ray.serve.exceptions import BackPressureError, RayServeException
from ray.serve.handle import DeploymentHandle

from gateway.catalogue import Catalogue
from gateway.domain.periodic import Periodic
from gateway.observability.outage import OutageLog
from gateway.serving.base import (GenerationChunk, GenerationFailed, GenerationRequest, TenantQueueFull, VersionInfo,
                                  VersionOverloaded, VersionUnavailable)
from gateway.serving.pool import versions_from_catalogue
from gateway.settings import Settings
from workers.engine.errors import EngineOverloaded
from workers.engine.input_processor import InputProcessor
from workers.serve import protocol
from workers.serve.protocol import sampling_params, schedule_params
from workers.serve.app import app_name, deploy
from workers.serve.config import VersionServeConfig
from workers.serve.health import VersionHealth
from workers.serve.metrics_relay import RelayedMetrics, read_hub
from workers.serve.placement import Host, local_ray_system_config, place
from workers.serve.prefix_router import prefix_key
from workers.serve.tokenizer import load_tokenizer

log = logging.getLogger(__name__)



class ReplicaLost(GenerationFailed):
    """The replica serving a stream died (or the stream timed out) after tokens were sent."""

    def __init__(self, message: str, *, version: str, prompt_tokens: int, completion_tokens: int) -> None:
        super().__init__(message)
        self.version, self.prompt_tokens, self.completion_tokens = version, prompt_tokens, completion_tokens


def own_handle(handle: DeploymentHandle) -> DeploymentHandle:
    """A handle of this backend's own (not Serve's cached one) whose router runs on this process's event loop
    instead of a loop of its own in another thread (Serve's default, RAY_SERVE_RUN_ROUTER_IN_SEPARATE_LOOP, read
    when Ray is imported): each streamed chunk then reaches the request without a thread hop. serve_profile,
    alternated: the gateway's CPU per token 370 / 446 -> 258 / 288 us with the replicas' user code on Serve's loop
    too (workers/serve/config.py). Being our own, stop() shuts its router down on this loop, before Serve's
    shutdown (from any thread) goes through its cache."""
    if not isinstance(handle, DeploymentHandle):
        return handle
    mine: DeploymentHandle = DeploymentHandle(handle.deployment_name, handle.app_name)
    mine._init(_run_router_in_separate_loop=False)
    return mine


class RayServeBackend:
    def __init__(self, settings: Settings, catalogue: Catalogue, *, engine_overrides: dict | None = None,
                 versions: list[str] | None = None, first_chunk_timeout_s: float = 30.0,
                 health_poll_s: float = 2.0, metrics_poll_s: float = 2.0, **serve_overrides) -> None:
        self._settings = settings
        configs = versions_from_catalogue(catalogue, engine_overrides=engine_overrides, versions=versions,
                                          prefix_routing=settings.ray_prefix_routing, **serve_overrides)
        if settings.ray_placement and not settings.ray_address:
            # A Ray of our own: this host's cores, or as many as it is given (ray_num_cpus).
            host = Host.local(settings.ray_num_cpus)
            configs = [self._placed(c, host) for c in configs]
        self._configs: dict[str, VersionServeConfig] = {c.version: c for c in configs}
        self._models = {v: v.partition("@")[0] for v in self._configs}
        self._first_chunk_timeout_s = first_chunk_timeout_s
        # The replica's chunks are msgpack bytes already: pickle carries bytes as they are (cloudpickle, Ray's
        # default, does the same work more slowly). By reference: one Ray object per chunk through the owner.
        self._stream_options: dict[str, object] = (
            {"stream": True, "_by_reference": False, "request_serialization": "pickle",
             "response_serialization": "pickle"} if settings.ray_grpc_streams else {"stream": True})
        # A health poll is one serve.status() call: ~35 ms of the gateway's CPU (it rebuilds and cloudpickles each
        # deployment's router config), a third of the gateway's Python time under load when polled every 0.5 s
        # (benchmarks/serve_profile.py). A lost replica is marked at once by the request that meets it, so 2 s only
        # delays noticing a recovered one. A failed poll (the controller or the hub briefly unreachable) keeps the
        # last view; logged when polls start failing and when they work again. Health is read once in start(), so
        # its poll waits first.
        self._health_poller = Periodic("ray-backend-health", self._refresh_health, health_poll_s, wait_first=True,
                                       outage=OutageLog(log, "ray backend: the health poll"))
        self._metrics_poller = Periodic("ray-backend-metrics", self._read_engine_metrics, metrics_poll_s,
                                        outage=OutageLog(log, "ray backend: reading engine metrics from the hub"))
        self._handles: dict[str, serve.handle.DeploymentHandle] = {}
        self._inputs: dict[str, InputProcessor] = {}
        self._health = VersionHealth()
        self._replicas: dict[str, int] = {}  # per version, as of the last status poll (economics)
        # The pool's engine series, summed over replicas, on this process's /metrics (workers/serve/metrics_relay.py).
        self._engine_metrics = RelayedMetrics()
        self._started_ray = False

    @staticmethod
    def _placed(cfg: VersionServeConfig, host: Host) -> VersionServeConfig:
        placed = place(cfg, host)
        if placed.reasons:
            log.info("ray backend: %s on %d cores: %s", cfg.version, host.cores, "; ".join(placed.reasons))
        return placed.config

    # -- life cycle ----------------------------------------------------------------------

    async def start(self) -> None:
        if self._handles:
            return  # already started (a test may hand a started backend to the app)
        if not ray.is_initialized():
            kw: dict[str, object] = {"address": self._settings.ray_address} if self._settings.ray_address else {
                "num_cpus": self._settings.ray_num_cpus, "include_dashboard": False}
            if not self._settings.ray_address and self._settings.ray_placement:
                kw["_system_config"] = local_ray_system_config()  # replicas at nice 0 (workers/serve/placement.py)
            # ray.init installs a SIGTERM handler that exits at once, cancelling every request in flight; the
            # server's own (uvicorn: stop accepting, drain, then exit) must stay in charge of a graceful stop.
            previous = signal.getsignal(signal.SIGTERM)
            ray.init(namespace=self._settings.ray_namespace, **kw)
            if previous is not None and threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGTERM, previous)
            self._started_ray = not self._settings.ray_address  # a joined cluster, and its pool, outlive us
        configs = list(self._configs.values())
        if self._settings.ray_deploy:
            self._handles = await asyncio.to_thread(deploy, configs)
        else:
            self._handles = {c.version: serve.get_app_handle(app_name(c.version)) for c in configs}
        self._handles = {v: own_handle(h) for v, h in self._handles.items()}
        tokenizers: dict[str, object] = {}
        for c in configs:
            info = await self._handles[c.version].info.remote()
            weights = c.engine["model"]
            if weights not in tokenizers:
                tokenizers[weights] = await asyncio.to_thread(load_tokenizer, weights)
            self._inputs[c.version] = InputProcessor(tokenizers[weights], max_model_len=info["max_model_len"],
                                                     kv_capacity_tokens=info["kv_capacity_tokens"],
                                                     block_size=info["block_size"])
        await self._refresh_health()
        self._health_poller.start()
        REGISTRY.register(self._engine_metrics)
        self._metrics_poller.start()

    async def stop(self) -> None:
        await self._health_poller.stop()
        if self._metrics_poller.running:
            await self._metrics_poller.stop()
            REGISTRY.unregister(self._engine_metrics)
        handles, self._handles = self._handles, {}
        for h in handles.values():
            if isinstance(h, DeploymentHandle):
                await h.shutdown_async()
        # The pool outlives a gateway on a shared cluster; only a Ray this backend started goes.
        if self._started_ray:
            await asyncio.to_thread(serve.shutdown)
            ray.shutdown()
            self._started_ray = False

    # -- reads ---------------------------------------------------------------------------

    def versions(self) -> list[VersionInfo]:
        return [VersionInfo(v, self._models[v], ip.max_model_len) for v, ip in self._inputs.items()]

    def count_prompt_tokens(self, version: str, *, prompt: str | None = None,
                            messages: list[dict] | None = None) -> int:
        inputs = self._inputs.get(version)
        if inputs is None:
            raise VersionUnavailable(f"version {version!r} is not deployed")
        return len(inputs.tokenize(prompt, messages))

    def token_texts(self, version: str, token_ids: list[int]) -> list[str]:
        inputs = self._inputs.get(version)
        if inputs is None:
            raise VersionUnavailable(f"version {version!r} is not deployed")
        return [inputs.tokenizer.decode([t], skip_special_tokens=False) for t in token_ids]

    def tokenize(self, version: str, *, prompt: str | None = None, messages: list[dict] | None = None,
                 add_generation_prompt: bool = True) -> list[int]:
        return self._inputs_of(version).tokenize(prompt, messages, add_generation_prompt=add_generation_prompt)

    def detokenize(self, version: str, token_ids: list[int]) -> str:
        return self._inputs_of(version).detokenize(token_ids)

    def _inputs_of(self, version: str) -> InputProcessor:
        inputs = self._inputs.get(version)
        if inputs is None:
            raise VersionUnavailable(f"version {version!r} is not deployed")
        return inputs

    async def health(self) -> dict[str, bool]:
        await self._refresh_health()
        return self._health.snapshot()

    async def describe(self, version: str) -> dict:
        """One replica's own view (version, replica id, pid, max_model_len): for operators and tests."""
        handle = self._handles.get(version)
        if handle is None:
            raise VersionUnavailable(f"version {version!r} is not deployed")
        return await handle.info.remote()

    async def _refresh_health(self) -> None:
        status = await asyncio.to_thread(serve.status)
        running = {}
        for version in self._configs:
            app = status.applications.get(app_name(version))
            deployments = app.deployments.values() if app is not None else []
            running[version] = sum(d.replica_states.get("RUNNING", 0) for d in deployments)
        self._health.update(running, time.monotonic())
        self._replicas = running

    async def _read_engine_metrics(self) -> None:
        self._engine_metrics.update(await read_hub())

    @property
    def replica_pool(self) -> str:
        """Gateways attached to one cluster share its pool; a Ray this process started is its own."""
        if self._settings.ray_address:
            return f"ray:{self._settings.ray_address}/{self._settings.ray_namespace}"
        return f"ray-local:{socket.gethostname()}:{os.getpid()}"

    def replica_counts(self) -> dict[str, int]:
        """RUNNING replicas per version (standby ones included: they are replicas of the same deployment), as of
        the last status poll (every health_poll_s)."""
        return dict(self._replicas)

    # -- generation ----------------------------------------------------------------------

    async def stream(self, request: GenerationRequest) -> AsyncGenerator[GenerationChunk, None]:
        key = prefix_key(request.prompt, request.messages) if self._settings.ray_prefix_routing else None
        chunks = self.stream_raw(request, prefix_key=key)
        try:
            async for raw in chunks:
                yield GenerationChunk.from_wire(raw)
        finally:
            await chunks.aclose()  # the caller left early: cancel the replica's generation now

    async def stream_raw(self, request: GenerationRequest, *,
                         prefix_key: str | None = None) -> AsyncIterator[protocol.Chunk]:
        """Chunks as the replica sends them (the first names `version` and `replica`)."""
        version = request.version
        handle = self._handles.get(version)
        if handle is None:
            raise VersionUnavailable(f"version {version!r} is not deployed")
        wire = request.to_wire()
        sampling_params(wire), schedule_params(wire)  # ValueError naming the field: a 400, before a replica is bothered
        payload = protocol.encode(wire)
        if not self._health.healthy(version):
            raise VersionUnavailable(f"version {version!r} has no ready replica")
        gen = handle.options(**self._stream_options).generate.remote(payload, prefix_key=prefix_key)
        deadline = time.monotonic() + self._settings.request_timeout_s
        sent = prompt_tokens = 0
        # finished: the stream completed; settled: it ended in an error that already closed it
        # (cancelling a refused or failed request would only raise its error again).
        finished = settled = False
        try:
            try:
                first = protocol.decode_chunk(await asyncio.wait_for(gen.__anext__(), self._first_chunk_timeout_s))
            except StopAsyncIteration:
                settled = True
                raise VersionUnavailable(f"{version}: the replica ended the stream without output") from None
            except TimeoutError:
                raise VersionOverloaded(f"{version}: no first token within {self._first_chunk_timeout_s:g}s") from None
            except BackPressureError as e:
                settled = True
                raise VersionOverloaded(f"{version}: {e}") from e
            except RayTaskError as e:
                settled = True
                if isinstance(e, ValueError):
                    raise ValueError(str(e.cause)) from e
                if isinstance(e.cause, EngineOverloaded):  # the replica's admission refused it: nothing queued
                    raise (TenantQueueFull if e.cause.scope == "tenant" else VersionOverloaded)(
                        f"{version}: {e.cause}") from e
                raise VersionUnavailable(f"{version}: {e}") from e
            except (RayError, RayServeException) as e:
                settled = True
                self._health.lost(version, time.monotonic())
                raise VersionUnavailable(f"{version}: replica lost before the first token: {e}") from e
            chunk = first
            while True:
                sent, prompt_tokens = chunk.completion_tokens, chunk.prompt_tokens
                finished = chunk.finish_reason is not None
                yield chunk
                if finished:
                    return
                try:
                    chunk = protocol.decode_chunk(
                        await asyncio.wait_for(gen.__anext__(), max(0.0, deadline - time.monotonic())))
                except StopAsyncIteration:
                    settled = True
                    raise ReplicaLost(f"{version}: stream ended without a finish reason", version=version,
                                      prompt_tokens=prompt_tokens, completion_tokens=sent) from None
                except TimeoutError:
                    raise ReplicaLost(f"{version}: timed out after {self._settings.request_timeout_s:g}s",
                                      version=version, prompt_tokens=prompt_tokens, completion_tokens=sent) from None
                except (RayError, RayServeException) as e:
                    settled = True
                    self._health.lost(version, time.monotonic())
                    raise ReplicaLost(f"{version}: replica lost mid-stream after {sent} tokens: {e}",
                                      version=version, prompt_tokens=prompt_tokens, completion_tokens=sent) from e
        finally:
            if not (finished or settled):
                gen.cancel()  # the replica's generator is cancelled; the engine aborts and frees blocks
