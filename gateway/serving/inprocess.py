"""The serving interface with the workers engine inside this process: one AsyncEngine per version."""
from __future__ import annotations

import os
import socket
from collections.abc import AsyncGenerator

from gateway.catalogue import Catalogue
from gateway.serving.base import (GenerationChunk, GenerationFailed, GenerationRequest, TenantQueueFull, VersionInfo,
                                  VersionOverloaded, VersionUnavailable)
from workers.config import EngineConfig
from workers.engine.async_engine import AsyncEngine
from workers.engine.errors import EngineDeadError, EngineOverloaded
from workers.serve.protocol import ChunkWriter, sampling_params, schedule_params


class InProcessBackend:
    """Engines for `versions` (default: every catalogue version), built from the version's
    `engine:` settings, then `engine_overrides` (tests and small machines shrink pools)."""

    def __init__(self, catalogue: Catalogue, engine_overrides: dict | None = None, *,
                 versions: list[str] | None = None) -> None:
        names = versions if versions is not None else catalogue.pool_version_names()
        self._configs: dict[str, EngineConfig] = {}
        self._models: dict[str, str] = {}
        for name in names:
            model, spec, version = catalogue.version(name)  # KeyError: a version the catalogue lacks
            self._configs[name] = EngineConfig(**{"model": spec.weights, **version.engine, **(engine_overrides or {})})
            self._models[name] = model
        self._engines: dict[str, AsyncEngine] = {}

    async def start(self) -> None:
        for name, config in self._configs.items():
            engine = AsyncEngine(config, model_name=name)
            await engine.start()
            self._engines[name] = engine

    async def stop(self) -> None:
        engines, self._engines = self._engines, {}
        for engine in engines.values():
            await engine.stop()

    def versions(self) -> list[VersionInfo]:
        return [VersionInfo(name, self._models[name], engine.max_model_len) for name, engine in self._engines.items()]

    def _engine(self, version: str) -> AsyncEngine:
        engine = self._engines.get(version)
        if engine is None:
            raise VersionUnavailable(f"version {version!r} is not loaded in this process")
        return engine

    def count_prompt_tokens(self, version: str, *, prompt: str | None = None,
                            messages: list[dict] | None = None) -> int:
        return self._engine(version).count_prompt_tokens(prompt=prompt, messages=messages)

    async def stream(self, request: GenerationRequest) -> AsyncGenerator[GenerationChunk, None]:
        engine = self._engine(request.version)
        wire = request.to_wire()
        params, schedule = sampling_params(wire), schedule_params(wire)  # ValueError naming the field: a 400
        outputs = engine.generate(request.request_id, request.prompt, messages=request.messages, params=params,
                                  cache_salt=request.cache_salt, schedule=schedule)
        chunk = ChunkWriter()  # the replica's chunk format, so both backends hand the gateway the same
        started = False
        try:
            async for out in outputs:
                started = True
                yield GenerationChunk.from_wire(chunk(out))
        except EngineDeadError as e:
            # Before the first token another version may still serve it; after, the stream is broken.
            raise (GenerationFailed if started else VersionUnavailable)(f"{request.version}: {e}") from e
        except EngineOverloaded as e:  # refused on admission: nothing was queued
            raise (TenantQueueFull if e.scope == "tenant" else VersionOverloaded)(f"{request.version}: {e}") from e
        finally:
            await outputs.aclose()  # the client left early: the engine aborts and frees its blocks

    def token_texts(self, version: str, token_ids: list[int]) -> list[str]:
        tokenizer = self._engine(version).tokenizer
        return [tokenizer.decode([t], skip_special_tokens=False) for t in token_ids]

    def tokenize(self, version: str, *, prompt: str | None = None, messages: list[dict] | None = None,
                 add_generation_prompt: bool = True) -> list[int]:
        return self._engine(version).inputs.tokenize(prompt, messages, add_generation_prompt=add_generation_prompt)

    def detokenize(self, version: str, token_ids: list[int]) -> str:
        return self._engine(version).inputs.detokenize(token_ids)

    async def health(self) -> dict[str, bool]:
        return {name: engine.is_running for name, engine in self._engines.items()}

    @property
    def replica_pool(self) -> str:
        """This process's engines are nobody else's (gateway/economics/recorder.py)."""
        return f"inprocess:{socket.gethostname()}:{os.getpid()}"

    def replica_counts(self) -> dict[str, int]:
        """One replica per running engine."""
        return {name: int(engine.is_running) for name, engine in self._engines.items()}
