"""The serving interface over external upstreams: each catalogue version with `upstream:` is served by its
upstream's server through that upstream's protocol adapter.

Before the first token every failure is an UpstreamRefused (a VersionUnavailable: the pipeline tries the alias'
fallbacks, else answers its status with Retry-After) and is never billed; after it, a GenerationFailed (the
stream ends with an error event, the delivered tokens billed). Timeouts: connect (the client's), first token
(request sent -> first answer event), idle (between two events; keep-alive comments do not reset it) and the
whole request (timeout_s)."""
from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass

import httpx

from gateway.catalogue import Catalogue
from gateway.serving.base import (GenerationChunk, GenerationFailed, GenerationRequest, UpstreamRefused,
                                  VersionInfo, VersionOverloaded, VersionUnavailable)
from gateway.upstreams.assembler import UPSTREAM, ChunkAssembler
from gateway.upstreams.breaker import BreakerConfig
from gateway.upstreams.client import ClientPool
from gateway.upstreams.config import UpstreamConfig
from gateway.upstreams.protocols import PROTOCOLS
from gateway.upstreams.protocols.base import StreamError, UpstreamProtocol
from gateway.upstreams.refusals import refusal_of, refused_by
from gateway.upstreams.request import endpoint_of, upstream_body
from gateway.upstreams.secrets import scrub
from gateway.upstreams.sse import sse_events
from gateway.upstreams.tokens import TokenCounter, counter_for
from gateway.upstreams.upstream import Upstream

log = logging.getLogger("tollgate.upstreams")

_CONNECT_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


@dataclass(frozen=True, slots=True)
class UpstreamVersion:
    name: str  # "gpt-mini@api"
    model: str  # the catalogue's priced model
    upstream: str
    upstream_model: str  # the upstream's own id: sent to it, never shown to clients
    max_model_len: int
    tokenizer: str | None


def versions_of(catalogue: Catalogue) -> dict[str, UpstreamVersion]:
    out = {}
    for name in catalogue.upstream_version_names():
        model, _, spec = catalogue.version(name)
        out[name] = UpstreamVersion(name, model, spec.upstream, spec.model, spec.max_model_len, spec.tokenizer)
    return out


class UpstreamBackend:
    def __init__(self, catalogue: Catalogue, *, environ: Mapping[str, str], breaker: BreakerConfig = BreakerConfig(),
                 protocols: Mapping[str, UpstreamProtocol] = PROTOCOLS) -> None:
        self._versions = versions_of(catalogue)
        self._protocols = protocols
        for name, spec in catalogue.upstreams.items():
            if spec.protocol not in protocols:
                raise ValueError(f"upstreams.{name}.protocol: {spec.protocol!r} is not available in this build "
                                 f"(have {sorted(protocols)})")
        self.upstreams = {name: Upstream(UpstreamConfig.from_spec(name, spec, environ), breaker)
                          for name, spec in catalogue.upstreams.items()}
        self._catalogue_configs = {name: up.config for name, up in self.upstreams.items()}
        self._clients = ClientPool()

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self._versions)

    async def start(self) -> None:
        return None  # clients open on first use; a down upstream must not stop the gateway starting

    async def stop(self) -> None:
        await self._clients.close()

    def versions(self) -> list[VersionInfo]:
        return [VersionInfo(v.name, v.model, v.max_model_len, upstream=v.upstream) for v in self._versions.values()]

    def _version(self, name: str) -> UpstreamVersion:
        try:
            return self._versions[name]
        except KeyError:
            raise VersionUnavailable(f"version {name!r} is not an upstream version") from None

    def _counter(self, version: str) -> TokenCounter:
        return counter_for(self._version(version).tokenizer)

    def count_prompt_tokens(self, version: str, *, prompt: str | None = None,
                            messages: list[dict] | None = None) -> int:
        return self._counter(version).count_prompt(prompt=prompt, messages=messages)

    def token_texts(self, version: str, token_ids: list[int]) -> list[str]:
        return ["" for _ in token_ids]  # upstream answers carry text, not this gateway's token ids

    def tokenize(self, version: str, *, prompt: str | None = None, messages: list[dict] | None = None,
                 add_generation_prompt: bool = True) -> list[int]:
        raise ValueError(f"{version} is served by an external upstream: the gateway does not hold its tokenizer")

    def detokenize(self, version: str, token_ids: list[int]) -> str:
        raise ValueError(f"{version} is served by an external upstream: the gateway does not hold its tokenizer")

    async def health(self) -> dict[str, bool]:
        return {v.name: self.upstreams[v.upstream].breaker.state != "open" for v in self._versions.values()}

    # --- live changes (PUT /admin/upstreams/{name}, from this replica or another through the event bus)

    def catalogue_config(self, name: str) -> UpstreamConfig:
        return self._catalogue_configs[name]

    async def configure(self, config: UpstreamConfig) -> None:
        """Serve `config` from now on: a fresh client, the health and circuit state reset."""
        up = self.upstreams[config.name]
        if config.protocol not in self._protocols:
            raise ValueError(f"protocol {config.protocol!r} is not available")
        up.config, up.last_error = config, None
        up.breaker.reset()
        await self._clients.replace(config)

    # --- serving

    async def stream(self, request: GenerationRequest) -> AsyncGenerator[GenerationChunk, None]:
        version = self._version(request.version)
        up = self.upstreams[version.upstream]
        config, protocol = up.config, self._protocols[up.config.protocol]
        counter = self._counter(request.version)
        # ValueError naming the field the protocol cannot express: a 400, nothing sent
        path, payload = protocol.request(endpoint_of(request), upstream_body(request), model=version.upstream_model)
        if not up.breaker.try_acquire():
            raise UpstreamRefused(f"upstream {config.name} is unavailable (circuit open)", status=503,
                                  retry_after_s=up.breaker.retry_after_s())
        if config.max_concurrency is not None and up.in_flight >= config.max_concurrency:
            up.breaker.released()
            raise VersionOverloaded(f"upstream {config.name} is at its max_concurrency")
        up.in_flight += 1
        reported = False  # the breaker was told how it went

        def refused(message: str, status: int, **kw) -> UpstreamRefused:
            nonlocal reported
            reported = True
            return refused_by(up, message, status, **kw)

        def broke(message: str) -> GenerationFailed:
            message = scrub(message, config.api_key)
            up.last_error = message[:300]
            log.warning("upstream stream broke", extra={"upstream": config.name, "why": message[:300]})
            return GenerationFailed(f"upstream {config.name}: {message}")

        loop = asyncio.get_running_loop()
        deadline = loop.time() + config.timeout_s
        first_by = min(deadline, loop.time() + config.first_token_timeout_s)
        client = self._clients.get(config)
        sent = client.build_request("POST", path, json=payload, headers=protocol.headers(config.api_key))
        response: httpx.Response | None = None
        started = False
        try:
            try:
                async with asyncio.timeout_at(first_by):
                    response = await client.send(sent, stream=True)
            except _CONNECT_ERRORS as e:
                raise refused(f"cannot connect ({type(e).__name__})", 503) from None
            except TimeoutError:
                raise refused(f"no answer within {config.first_token_timeout_s:g} s", 504) from None
            except httpx.HTTPError as e:
                raise refused(f"request failed ({type(e).__name__})", 502) from None
            if response.status_code >= 400:
                try:
                    async with asyncio.timeout_at(first_by):
                        raw = await response.aread()
                except (TimeoutError, httpx.HTTPError):
                    raw = b""
                raise refusal_of(response, raw, protocol, refused, config.api_key)
            translator = protocol.translator(model=version.upstream_model)
            prompt_estimate = counter.count_prompt(prompt=request.prompt, messages=request.messages)
            assembler = ChunkAssembler(n=request.n, prompt_tokens=prompt_estimate, counter=counter)
            events = aiter(sse_events(response.aiter_lines()))
            while not translator.finished:
                until = first_by if not started else min(deadline, loop.time() + config.idle_timeout_s)
                try:
                    async with asyncio.timeout_at(until):
                        event = await anext(events, None)
                except TimeoutError:
                    if assembler.done:
                        break  # the answer is whole; only its usage or [DONE] never came
                    if not started:
                        raise refused(f"no first token within {config.first_token_timeout_s:g} s", 504) from None
                    raise broke(f"no event for {config.idle_timeout_s:g} s (idle timeout)") from None
                except httpx.HTTPError as e:
                    if assembler.done:
                        break
                    if not started:
                        raise refused(f"the stream failed ({type(e).__name__})", 502) from None
                    raise broke(f"the stream failed ({type(e).__name__})") from None
                if event is None:
                    break
                try:
                    dicts = translator.feed(*event)
                except StreamError as e:
                    if not started:
                        raise refused(f"error event: {e}", 502) from None
                    raise broke(f"error event: {e}") from None
                for d in dicts:
                    for chunk in assembler.feed(d):
                        if not started:
                            started, reported = True, True
                            up.breaker.succeeded()
                        yield chunk
                if assembler.done and assembler.metered_by == UPSTREAM:
                    break  # every choice finished and the usage came: nothing is left to wait for
            last = assembler.end()
            if last is None:
                if not started:
                    raise refused("the stream ended without an answer", 502)
                raise broke("the stream ended before the answer finished")
            if not reported:
                reported = True
                up.breaker.succeeded()
            yield last
        finally:
            up.in_flight -= 1
            if not reported:
                up.breaker.released()
            if response is not None:
                await response.aclose()

    async def embed(self, upstream: str, model: str, inputs: list[str], *,
                    dimensions: int | None = None) -> tuple[list[list[float]], int | None]:
        """(one vector per input, the upstream's prompt_tokens or None) from an OpenAI-protocol upstream's
        /embeddings. Failures as for a generation before its first token: UpstreamRefused, ValueError (a 400)."""
        up = self.upstreams[upstream]
        config, protocol = up.config, self._protocols[up.config.protocol]
        if not up.breaker.try_acquire():
            raise UpstreamRefused(f"upstream {config.name} is unavailable (circuit open)", status=503,
                                  retry_after_s=up.breaker.retry_after_s())
        body = {"model": model, "input": inputs, "encoding_format": "float",
                **({"dimensions": dimensions} if dimensions is not None else {})}
        client = self._clients.get(config)
        up.in_flight += 1
        try:
            try:
                async with asyncio.timeout(config.timeout_s):
                    response = await client.post("/embeddings", json=body, headers=protocol.headers(config.api_key))
            except _CONNECT_ERRORS as e:
                raise refused_by(up, f"cannot connect ({type(e).__name__})", 503) from None
            except TimeoutError:
                raise refused_by(up, f"no answer within {config.timeout_s:g} s", 504) from None
            except httpx.HTTPError as e:
                raise refused_by(up, f"request failed ({type(e).__name__})", 502) from None
            if response.status_code >= 400:
                raise refusal_of(response, response.content, protocol, lambda *a, **k: refused_by(up, *a, **k),
                                 config.api_key)
            try:
                answer = response.json()
                rows = sorted(answer["data"], key=lambda d: d["index"])
                vectors = [[float(x) for x in row["embedding"]] for row in rows]
                tokens = (answer.get("usage") or {}).get("prompt_tokens")
            except (ValueError, KeyError, TypeError):
                raise refused_by(up, "malformed embeddings answer", 502) from None
            if len(vectors) != len(inputs):
                raise refused_by(up, f"{len(vectors)} embeddings for {len(inputs)} inputs", 502)
            up.breaker.succeeded()
            return vectors, int(tokens) if isinstance(tokens, int) else None
        finally:
            up.in_flight -= 1

