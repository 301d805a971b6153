"""A catalogue with upstream versions beside the pool, and a month of their traffic in the ledger: what the
economics page tests (HTTP and browser) look at."""
from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import yaml

from gateway.billing.ledger import Ledger, UsageRecord
from gateway.billing.prices import PriceBook
from gateway.crud.replica_minutes import record_replica_minute
from gateway.db.database import Database
from gateway.db.types import utcnow
from gateway.domain.period import Month
from gateway.settings import Settings
from tests.gateway.support import FP32, free_port, make_tenant

MODEL = "smollm2-135m-instruct"
MIXED_API = f"{MODEL}@api"  # an upstream version of the pool's model: the what-if and the crossover
HOSTED = "api-chat@hosted"  # a model only an upstream serves
PROVIDER = {"input_per_million": 0.5, "output_per_million": 1.0}  # what the provider charges the operator


def economics_catalogue(tmp: Path) -> Path:
    """The deploy catalogue plus an upstream `hosted` (never called: the ledger is seeded directly) behind a
    version of the pool's model and behind a model of its own."""
    raw = yaml.safe_load(Settings().catalogue.read_text())
    raw.setdefault("upstreams", {})["hosted"] = {"protocol": "openai",
                                                 "base_url": f"http://127.0.0.1:{free_port()}/v1"}
    raw["models"][MODEL]["versions"]["api"] = {"upstream": "hosted", "model": "gpt-x", "cost": PROVIDER}
    raw["models"]["api-chat"] = {"price": {"input_per_million": 1.0, "output_per_million": 2.0},
                                 "versions": {"hosted": {"upstream": "hosted", "model": "gpt-x",
                                                         "cost": PROVIDER}}}
    path = tmp / "catalogue.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def seed_month(url: str) -> str:
    """This month: the pool (fp32, 100 output tokens per busy second, one replica up 60 minutes), its model's
    upstream version, and api-chat (2M prompt + 1M output tokens: 2.0 at the provider's prices, 4.0 billed).
    Returns the tenant. Runs the ledger's flush on a thread of its own: callable beside a running event loop
    (Playwright's)."""
    tenant, _ = make_tenant(url)
    start = Month.containing(utcnow()).period.start
    db = Database(url)
    try:
        ledger = Ledger(db, PriceBook(db), "USD", linger_s=0)

        def row(n: int, model: str, version: str, prompt: int, completion: int, engine_ms: float) -> UsageRecord:
            return UsageRecord(request_id=f"econ-{n}", tenant_id=tenant, key_id=None, endpoint="/v1/chat/completions",
                               model=model, version=version, prompt_tokens=prompt, completion_tokens=completion,
                               engine_ms=engine_ms, created_at=start + timedelta(minutes=n))
        ledger.record(row(1, MODEL, FP32, 1000, 1000, 10_000.0))
        ledger.record(row(2, MODEL, MIXED_API, 1000, 500, 0.0))
        ledger.record(row(3, "api-chat", HOSTED, 2_000_000, 1_000_000, 0.0))
        with ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, ledger.flush()).result()
        with db.engine.begin() as conn:
            for m in range(60):
                record_replica_minute(conn, pool="inprocess:test", minute=start + timedelta(minutes=m),
                                      counts={FP32: 1})
    finally:
        db.dispose()
    return tenant
