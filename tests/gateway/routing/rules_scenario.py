"""A mixed workload through the live gateway with routing rules on an alias of two versions, a cheap one and a
strong one (the canned backend, the topic embedder): which rule sent what where, and what it cost against
sending everything to the strong one. Shared by the acceptance test and benchmarks/routing_rules.py."""
from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import httpx
import yaml

from gateway.billing.prices import PriceBook
from gateway.catalogue import parse_catalogue
from gateway.db.database import Database
from gateway.main import create_app
from tests.gateway.conftest import gateway_settings
from tests.gateway.routing.fakes import TopicEmbedder
from tests.gateway.support import (ADMIN_KEY, METRICS, CannedBackend, LiveServer, make_tenant, migrate_and_seed,
                                  usage_rows)

CHEAP, STRONG = "cheap@v1", "strong@v1"
ALIAS = "smart"
CATALOGUE = {
    "models": {
        "cheap": {"weights": "smollm2-135m-instruct", "versions": {"v1": {}},
                  "price": {"input_per_million": 0.05, "output_per_million": 0.10}},
        "strong": {"weights": "smollm2-135m-instruct", "versions": {"v1": {}},
                   "price": {"input_per_million": 0.50, "output_per_million": 1.50}},
    },
    "aliases": {ALIAS: {"weights": {STRONG: 100}, "fallbacks": [CHEAP]}},
    "routing": {"classifier": {"file": "tasks.jsonl", "threshold": 0.5}},
}
TASKS = [("python function bug", "code"), ("compile the sql code", "code"), ("code review of a function", "code"),
         ("hello and thanks", "chat"), ("weather for the trip", "chat"), ("a book for dinner", "chat")]
# First match wins: long prompts and code need the strong version; small answers and the free plan do not.
RULES = [{"name": "long-to-strong", "when": {"prompt_tokens": {"min": 400}}, "target": "strong@v1"},
         {"name": "code-to-strong", "when": {"task": ["code"]}, "target": "strong@v1"},
         {"name": "small-to-cheap", "when": {"max_tokens": {"max": 32}}, "target": "cheap@v1"},
         {"name": "free-to-cheap", "when": {"plan": ["free"]}, "target": "cheap@v1"}]
TEXTS = {"code": "please fix the python function bug in my code", "chat": "hello what is the weather for our trip"}
PADDING = " and some more context about it" * 14  # pushes a prompt past 400 bytes
ANSWER_TOKENS = 64  # the canned backend's answer, cut at max_tokens


@dataclass(frozen=True, slots=True)
class Ask:
    plan: str
    task: str
    long: bool
    max_tokens: int
    n: int = 0  # a ticket number that makes each text unique (no two requests share an embedding)

    @property
    def expected_rule(self) -> str | None:
        """What the rules above decide for it, worked out by hand."""
        if self.long:
            return "long-to-strong"
        if self.task == "code":
            return "code-to-strong"
        if self.max_tokens <= 32:
            return "small-to-cheap"
        return "free-to-cheap" if self.plan == "free" else None

    def body(self) -> dict:
        text = f"{TEXTS[self.task]} #{self.n}" + (PADDING if self.long else "")
        return {"model": ALIAS, "messages": [{"role": "user", "content": text}], "max_tokens": self.max_tokens}


def workload(repeat: int = 2) -> list[Ask]:
    """Every mix of plan, task, prompt length and max_tokens, `repeat` times."""
    mixes = [(plan, task, long, mt) for _ in range(repeat) for plan in ("free", "pro") for task in ("code", "chat")
             for long in (False, True) for mt in (16, 256)]
    return [Ask(*mix, n=n) for n, mix in enumerate(mixes)]


@dataclass(slots=True)
class Outcome:
    asks: list[Ask]
    rules: list[str | None]  # x-tollgate-route-rule of each response (None: the alias' own split)
    served: list[str]  # x-tollgate-model: the version that answered
    cost: Decimal  # billed, from the ledger
    all_strong: Decimal  # the same rows priced at the strong model
    embeddings: int  # task classifications the workload cost
    metrics: str = ""  # the gateway's /metrics after the workload

    def shares(self) -> dict[str, float]:
        counts = Counter(r or "(alias split)" for r in self.rules)
        return {rule: n / len(self.rules) for rule, n in sorted(counts.items())}

    @property
    def saved(self) -> Decimal:
        return self.all_strong - self.cost


def write_catalogue(tmp: Path) -> Path:
    (tmp / "tasks.jsonl").write_text("".join(json.dumps({"text": t, "label": label}) + "\n" for t, label in TASKS))
    path = tmp / "catalogue.yaml"
    path.write_text(yaml.safe_dump(CATALOGUE))
    return path


def run(tmp: Path, asks: list[Ask], *, unavailable: set[str] | None = None) -> Outcome:
    """`unavailable`: versions the backend refuses (VersionUnavailable), so their requests fall back."""
    path = write_catalogue(tmp)
    url = f"sqlite:///{tmp / 'tollgate.db'}"
    migrate_and_seed(url, parse_catalogue(CATALOGUE))
    tenants = {plan: make_tenant(url, plan=plan) for plan in ("free", "pro")}
    embedder = TopicEmbedder()
    settings = gateway_settings(tmp, url, catalogue=path, embeddings_enabled=False, cache_enabled=False)
    backend = CannedBackend(tokens=ANSWER_TOKENS, versions=[CHEAP, STRONG], unavailable=unavailable)
    rules, served = [], []
    with LiveServer(create_app(settings, backend=backend, embedder=embedder)) as server, \
            httpx.Client(base_url=server.url, timeout=30) as http:
        r = http.put(f"/admin/routes/{ALIAS}/rules", json={"rules": RULES},
                     headers={"Authorization": f"Bearer {ADMIN_KEY}"})
        r.raise_for_status()
        trained = len(embedder.calls)
        for ask in asks:
            r = http.post("/v1/chat/completions", json=ask.body(),
                          headers={"Authorization": f"Bearer {tenants[ask.plan][1]}"})
            r.raise_for_status()
            rules.append(r.headers.get("x-tollgate-route-rule"))
            served.append(r.headers["x-tollgate-model"])
        embeddings = len(embedder.calls) - trained
        metrics = http.get("/metrics", headers=METRICS).text
    rows = _all_rows(url, tenants, len(asks))
    db = Database(url)
    try:
        prices = PriceBook(db)
        prices.reload()
        all_strong = sum((prices.cost("strong", prompt_tokens=r.prompt_tokens, completion_tokens=r.completion_tokens)
                          for r in rows), Decimal(0))
    finally:
        db.dispose()
    return Outcome(asks, rules, served, sum((r.cost for r in rows), Decimal(0)), all_strong, embeddings, metrics)


def _all_rows(url: str, tenants: dict, n: int) -> list:
    """Every ledger row of the workload, once the ledger has written them all (it writes in the background)."""
    deadline = time.monotonic() + 15
    while True:
        rows = [row for tenant_id, _ in tenants.values() for row in usage_rows(url, tenant_id)]
        if len(rows) >= n or time.monotonic() > deadline:
            return rows
        time.sleep(0.1)
