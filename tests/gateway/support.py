"""Test helpers for the gateway: a migrated database, tenants and keys, a live uvicorn server,
and a canned-token backend (tests only; the real-model path runs through InProcessBackend)."""
from __future__ import annotations

import asyncio
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator

import uvicorn

from gateway.billing.prices import seed_prices_from_catalogue
from gateway.economics.costs import seed_version_costs_from_catalogue
from gateway.catalogue import Catalogue
from gateway.crud.keys import create_key
from gateway.crud.tenants import create_tenant
from gateway.db.database import Database
from gateway.db.migrate import upgrade
from gateway.serving.base import (GenerationChunk, GenerationFailed, GenerationRequest, VersionInfo,
                                  VersionOverloaded, VersionUnavailable)

FP32 = "smollm2-135m-instruct@fp32"
ADMIN_KEY = "tga-test-admin-key-0123456789abcdef"
METRICS_TOKEN = "tgm-test-metrics-token-0123456789abcdef"
METRICS = {"Authorization": f"Bearer {METRICS_TOKEN}"}  # /metrics is closed to anonymous scrapes


def migrate_and_seed(url: str, catalogue: Catalogue) -> None:
    upgrade(url)
    db = Database(url)
    try:
        with db.session() as session:
            seed_prices_from_catalogue(session, catalogue)
            seed_version_costs_from_catalogue(session, catalogue)  # as `tollgate migrate` does
    finally:
        db.dispose()


def make_tenant(url: str, *, models: list[str] | None = None, key_rpm: int | None = None,
                key_tpm: int | None = None, **limits) -> tuple[str, str]:
    """(tenant_id, api key) for a fresh tenant with `limits` (rpm, tpm, monthly_token_budget)."""
    db = Database(url)
    try:
        with db.session() as session:
            tenant = create_tenant(session, name=f"t-{uuid.uuid4().hex[:12]}", **limits)
            _, secret = create_key(session, tenant_id=tenant.id, models=models, rpm=key_rpm, tpm=key_tpm)
            return tenant.id, secret
    finally:
        db.dispose()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveServer:
    """The app under uvicorn on 127.0.0.1, in a background thread (its own event loop)."""

    def __init__(self, app, **options) -> None:
        """`options`: more uvicorn.Config arguments (e.g. gateway.cli.serve.proxy_options)."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                timeout_graceful_shutdown=10, **options)
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self.server.run, name=f"uvicorn-{self.port}", daemon=True)

    def __enter__(self) -> LiveServer:
        self._thread.start()
        deadline = time.monotonic() + 600
        while not self.server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the gateway failed to start (see the log above)")
            if time.monotonic() > deadline:
                raise TimeoutError("the gateway did not start in time")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self._thread.join(60)


CANNED_ENGINE_MS = 1.5


class CannedBackend:
    """Answers every request with `tokens` one-character tokens, `delay_s` apart; each token is metered as
    CANNED_ENGINE_MS of engine time (the chunks' cumulative engine_ms)."""

    def __init__(self, *, tokens: int = 8, delay_s: float = 0.0, versions: list[str] | None = None,
                 max_model_len: int = 2048, fail_after: int | None = None, first_delay_s: float = 0.0,
                 unavailable: set[str] | None = None, overloaded: set[str] | None = None) -> None:
        self.tokens, self.delay_s, self.first_delay_s = tokens, delay_s, first_delay_s
        self.fail_after = fail_after  # GenerationFailed after this many chunks
        self.unavailable, self.overloaded = unavailable or set(), overloaded or set()
        self.served: list[str] = []
        self._versions = versions or [FP32]
        self.max_model_len = max_model_len
        self.aborted: list[str] = []

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    def versions(self) -> list[VersionInfo]:
        return [VersionInfo(v, v.partition("@")[0], self.max_model_len) for v in self._versions]

    def count_prompt_tokens(self, version: str, *, prompt: str | None = None,
                            messages: list[dict] | None = None) -> int:
        return self._count(prompt, messages)

    def token_texts(self, version: str, token_ids: list[int]) -> list[str]:
        return [chr(t) if 32 <= t < 0x110000 else "" for t in token_ids]

    def tokenize(self, version: str, *, prompt: str | None = None, messages: list[dict] | None = None,
                 add_generation_prompt: bool = True) -> list[int]:
        text = prompt if prompt is not None else "".join(m["content"] for m in messages or [])
        return [ord(c) for c in text]

    def detokenize(self, version: str, token_ids: list[int]) -> str:
        if any(not 0 <= t < 0x110000 for t in token_ids):
            raise ValueError("token ids must be code points")
        return "".join(chr(t) for t in token_ids)

    @staticmethod
    def _count(prompt: str | None, messages: list[dict] | None) -> int:
        text = prompt if prompt is not None else "".join(m["content"] for m in messages or [])
        return max(1, len(text.split()))

    async def stream(self, request: GenerationRequest) -> AsyncIterator[GenerationChunk]:
        if request.version not in self._versions or request.version in self.unavailable:
            raise VersionUnavailable(request.version)
        if request.version in self.overloaded:
            raise VersionOverloaded(request.version)
        self.served.append(request.version)
        if self.first_delay_s:
            await asyncio.sleep(self.first_delay_s)
        prompt = self._count(request.prompt, request.messages)
        n = min(self.tokens, request.max_tokens)
        done = False
        try:
            for i in range(1, n + 1):
                if self.fail_after is not None and i > self.fail_after:
                    raise GenerationFailed("replica died")
                if self.delay_s:
                    await asyncio.sleep(self.delay_s)
                finish = ("length" if n == request.max_tokens else "stop") if i == n else None
                yield GenerationChunk(text="a", token_ids=[97], prompt_tokens=prompt, completion_tokens=i,
                                      cached_tokens=0, finish_reason=finish, engine_ms=i * CANNED_ENGINE_MS)
            done = True
        finally:
            if not done:
                self.aborted.append(request.request_id)

    async def health(self) -> dict[str, bool]:
        return dict.fromkeys(self._versions, True)


def usage_rows(url: str, tenant_id: str) -> list:
    from sqlalchemy import select

    from gateway.db.models.usage import Usage

    db = Database(url)
    try:
        with db.session() as session:
            return list(session.scalars(select(Usage).where(Usage.tenant_id == tenant_id).order_by(Usage.id)))
    finally:
        db.dispose()


def wait_usage_rows(url: str, tenant_id: str, n: int, *, timeout_s: float = 15.0) -> list:
    """The tenant's ledger rows once at least `n` have landed (the ledger writes in the background)."""
    deadline = time.monotonic() + timeout_s
    while True:
        rows = usage_rows(url, tenant_id)
        if len(rows) >= n or time.monotonic() > deadline:
            return rows
        time.sleep(0.1)
