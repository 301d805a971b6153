"""Schemathesis over the gateway's own OpenAPI schema: every /v1 and /admin operation, against a live app
over a canned backend and a hash embedder, on SQLite and on PostgreSQL. Each operation gets schemathesis'
examples and coverage phases (boundary and malformed values, fixed) and a bounded, derandomized fuzzing
phase; hooks aim part of the requests at real names and hostile values. No request may earn a 5xx, every
4xx is in OpenAI's error shape (Anthropic's on /v1/messages), and every stream ends in `data: [DONE]`
(`message_stop` on /v1/messages) without an error event."""
from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import numpy as np
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from gateway.crud.keys import create_key
from gateway.crud.tenants import create_tenant
from gateway.db.database import Database
from gateway.main import create_app
from gateway.settings import Settings
from tests.gateway.conftest import gateway_settings
from tests.gateway.data_fixtures import fresh_pg_schema
from tests.gateway.support import ADMIN_KEY, FP32, CannedBackend, LiveServer, make_tenant, migrate_and_seed

BF16 = "smollm2-135m-instruct@bf16"
# Fuzzing-phase requests per operation, on top of the examples and coverage phases (a few to a few hundred
# per operation): the module takes about a minute on two shared cores.
MAX_EXAMPLES = 15
# What admin requests act on, besides random names: one tenant (never the /v1 caller) and its key, fixed
# so that a failure reproduces with the same request.
TENANT_ID, KEY_ID = "f0220000-0000-4000-8000-000000000001", "f0220000-0000-4000-8000-000000000002"
REAL = {"tenant_id": TENANT_ID, "key_id": KEY_ID, "alias": "chat", "model": "smollm2-135m-instruct"}
MODELS = ["smollm2-135m-instruct", "chat", FP32, "all-minilm-l6-v2"]
# The fields most clients send: a body cut down to these (and a real model) gets past validation.
CORE = ("messages", "prompt", "input", "stream", "stream_options", "max_tokens", "temperature", "stop", "n",
        "system", "stop_sequences")
ERROR_FIELDS = {"message", "type", "param", "code"}

# Requests clients really send, for the examples phase: within a bounded budget, random bodies seldom get
# through validation to a generation (streamed or not) or an embedding.
SAY_HI = [{"role": "user", "content": "Say hi."}]
STREAM = {"stream": True, "stream_options": {"include_usage": True}}
EXAMPLES = {
    "/v1/chat/completions": [{"model": "chat", "messages": SAY_HI, "max_tokens": 4},
                             {"model": FP32, "messages": SAY_HI, "max_tokens": 2, "stop": ["a"], **STREAM}],
    "/v1/completions": [{"model": "smollm2-135m-instruct", "prompt": "Say hi.", "temperature": 0},
                        {"model": "chat", "prompt": ["Say hi."], "max_tokens": 3, **STREAM}],
    "/v1/messages": [{"model": "chat", "messages": SAY_HI, "max_tokens": 4, "system": "Be brief."},
                     {"model": FP32, "messages": SAY_HI, "max_tokens": 2, "stop_sequences": ["a"], "stream": True}],
    "/v1/messages/count_tokens": [{"model": "chat", "messages": SAY_HI, "system": [{"type": "text", "text": "Hi"}]}],
    "/v1/embeddings": [{"model": "all-minilm-l6-v2", "input": "Say hi."},
                       {"model": "all-minilm-l6-v2", "input": ["Say", "hi."], "encoding_format": "base64"}],
}


class HashEmbedder:
    """Stands in for MiniLM: a unit vector seeded by the text, one token per word."""
    dim = 16

    def embed_one(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
        return v / np.linalg.norm(v)

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.embed_one(t) for t in texts])  # [len(texts), dim]

    def count_tokens(self, texts: list[str]) -> int:
        return sum(len(t.split()) + 2 for t in texts)


def _target(url: str) -> None:
    """The tenant and key of REAL."""
    db = Database(url)
    try:
        with db.session() as session:
            create_tenant(session, name="fuzz-target", id=TENANT_ID)
            key, _ = create_key(session, tenant_id=TENANT_ID)
            key.id = KEY_ID  # create_key draws a random id
            session.commit()
    finally:
        db.dispose()


@contextmanager
def _live(tmp: Path, url: str, catalogue) -> Iterator[tuple[LiveServer, str]]:
    """The live app on one database and the /v1 caller's key."""
    migrate_and_seed(url, catalogue)
    _, key = make_tenant(url)  # no limits; admin requests never touch it
    _target(url)
    app = create_app(gateway_settings(tmp, url, docs_enabled=True),
                     backend=CannedBackend(tokens=4, versions=[FP32, BF16]), embedder=HashEmbedder())
    with LiveServer(app) as server:
        yield server, key


# The databases fail differently (PostgreSQL refuses NUL bytes in text, SQLite stores them): every generated
# request goes to both, one app on each. Drawn once and sent twice, the cases cost half what two
# parametrized passes cost (schemathesis builds its coverage cases again for each).
@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory, gw_catalogue):
    """{database: (live app, the /v1 caller's key)}."""
    sqlite, pg = tmp_path_factory.mktemp("fuzz-sqlite"), tmp_path_factory.mktemp("fuzz-pg")
    with fresh_pg_schema("fuzz") as pg_url, _live(sqlite, f"sqlite:///{sqlite / 'tollgate.db'}", gw_catalogue) as a, \
            _live(pg, pg_url, gw_catalogue) as b:
        yield {"sqlite": a, "postgres": b}


def with_examples(document: dict) -> dict:
    document = copy.deepcopy(document)
    for path, bodies in EXAMPLES.items():
        content = document["paths"][path]["post"]["requestBody"]["content"]["application/json"]
        content["examples"] = {f"example{i}": {"value": body} for i, body in enumerate(bodies)}
    return document


# The document comes from the app itself, at collection (the live app serves the same; see the last test).
DOCUMENT = create_app(Settings(docs_enabled=True, log_level="WARNING")).openapi()
schema = schemathesis.openapi.from_dict(with_examples(DOCUMENT)).include(path_regex="^/(v1|admin)/")


def hostile(value):
    """The same JSON type, at a value a small budget seldom draws but that has broken servers: a NUL byte
    (PostgreSQL refuses it in text), an instant whose offset takes it past year 9999, a 65-bit integer."""
    if isinstance(value, str):
        return "9999-12-31T23:59:59-23:59" if re.match(r"\d{4}-\d\d-\d\dT", value) else "a\x00b"
    if isinstance(value, int) and not isinstance(value, bool):
        return 2**64
    return value


# Random names almost always miss (404): a third of the time use real ones, to reach the code behind them,
# and a third hostile ones.
@schema.hook
def flatmap_path_parameters(_, params):
    if not params:
        return st.just(params)
    return st.sampled_from([params, {k: REAL.get(k, v) for k, v in params.items()},
                            {k: hostile(v) for k, v in params.items()}])


@schema.hook
def map_case(_, case):
    """The coverage phase varies one part of a request at a time: unless it is the path, aim at real names."""
    phase = case.meta.phase if case.meta else None
    if case.path_parameters and phase and phase.name == "coverage" and phase.data.parameter_location != "path":
        case.path_parameters = {k: REAL.get(k, v) for k, v in case.path_parameters.items()}
    return case


@schema.hook
def flatmap_query(_, query):
    if not query:
        return st.just(query)
    return st.sampled_from([query, {k: hostile(v) for k, v in query.items()}])


@schema.hook
def flatmap_headers(_, headers):
    # A random x-tollgate-version pin is refused (400) before anything else runs: often send none.
    return st.sampled_from([headers, {}]) if headers else st.just(headers)


@schema.hook
def flatmap_body(_, body):
    if not isinstance(body, dict):
        return st.just(body)
    variants = [body, {k: hostile(v) for k, v in body.items()}]
    if "model" in body:  # /v1
        core = {k: v for k, v in body.items() if k in CORE}
        variants += [{**body, "model": m} for m in MODELS] + [{**core, "model": m} for m in MODELS]
    return st.sampled_from(variants)


def events(text: str) -> list:
    return [line.removeprefix("data: ") for line in text.splitlines() if line.startswith("data: ")]


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, derandomize=True, database=None, deadline=None,
          suppress_health_check=list(HealthCheck))
@pytest.mark.postgres
def test_no_request_earns_a_server_error(case, fuzzed):
    for database, (server, key) in fuzzed.items():
        _check(case, server, key, database)


def _check(case, server: LiveServer, key: str, database: str) -> None:
    secret = ADMIN_KEY if case.path.startswith("/admin/") else key
    response = case.call(base_url=server.url, headers={"Authorization": f"Bearer {secret}"}, timeout=30)
    repro = f"on {database}: " + case.as_curl_command(headers={"Authorization": "Bearer ..."})
    assert response.status_code < 500, f"{response.status_code} {response.text[:500]}\n{repro}"
    anthropic = case.path.startswith("/v1/messages")
    if response.status_code >= 400 and anthropic:
        body = json.loads(response.content)
        assert body.get("type") == "error" and set(body["error"]) == {"type", "message"}, f"{response.text}\n{repro}"
        assert isinstance(body["error"]["message"], str), f"{response.text}\n{repro}"
    elif response.status_code >= 400:
        error = json.loads(response.content)["error"]
        assert set(error) == ERROR_FIELDS and isinstance(error["message"], str), f"{response.text}\n{repro}"
    elif anthropic and response.headers.get("content-type", [""])[0].startswith("text/event-stream"):
        names = [line.removeprefix("event: ") for line in response.text.splitlines() if line.startswith("event: ")]
        assert names[-1] == "message_stop" and "error" not in names, f"{response.text}\n{repro}"
    elif response.headers.get("content-type", [""])[0].startswith("text/event-stream"):
        # No limits and a backend that never fails: nothing may go wrong once a stream started.
        *data, done = events(response.text)
        assert done == "[DONE]" and not any("error" in json.loads(d) for d in data), f"{response.text}\n{repro}"


@pytest.mark.postgres
def test_the_live_app_serves_the_fuzzed_document(fuzzed):
    for server, _ in fuzzed.values():
        assert httpx.get(f"{server.url}/openapi.json").json() == DOCUMENT
