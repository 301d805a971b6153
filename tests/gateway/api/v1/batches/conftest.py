"""A live gateway over the canned backend with a quick batch runner, and helpers that speak the Files and Batch
APIs over HTTP."""
from __future__ import annotations

import json
import time

import httpx
import pytest

from gateway.main import create_app
from tests.gateway.conftest import gateway_settings
from tests.gateway.support import CannedBackend, LiveServer, migrate_and_seed

MODEL = "smollm2-135m-instruct"
QUICK = {"batch_poll_s": 0.05, "batch_lease_s": 1.0}


@pytest.fixture(scope="module")
def db(tmp_path_factory, gw_catalogue):
    tmp = tmp_path_factory.mktemp("batches")
    url = f"sqlite:///{tmp / 'tollgate.db'}"
    migrate_and_seed(url, gw_catalogue)
    return tmp, url


def serve(db, backend: CannedBackend | None = None, *, embedder=None, **settings) -> LiveServer:
    tmp, url = db
    settings = gateway_settings(tmp, url, **{"embeddings_enabled": False, "cache_enabled": False, **QUICK, **settings})
    return LiveServer(create_app(settings, backend=backend or CannedBackend(), embedder=embedder))


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def chat_line(i: int, *, custom_id: str | None = None, **body) -> dict:
    return {"custom_id": custom_id or f"req-{i}", "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": MODEL, "messages": [{"role": "user", "content": f"say {i}"}], **body}}


def jsonl(lines: list[dict]) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def upload(server: LiveServer, key: str, content: bytes, *, purpose: str = "batch",
           filename: str = "in.jsonl") -> httpx.Response:
    return httpx.post(f"{server.url}/v1/files", headers=auth(key), data={"purpose": purpose},
                      files={"file": (filename, content, "application/jsonl")}, timeout=30)


def create(server: LiveServer, key: str, file_id: str, endpoint: str = "/v1/chat/completions",
           **extra) -> httpx.Response:
    body = {"input_file_id": file_id, "endpoint": endpoint, "completion_window": "24h", **extra}
    return httpx.post(f"{server.url}/v1/batches", headers=auth(key), json=body, timeout=30)


def batch_of(server: LiveServer, key: str, lines: list[dict], endpoint: str = "/v1/chat/completions") -> dict:
    up = upload(server, key, jsonl(lines))
    assert up.status_code == 200, up.text
    made = create(server, key, up.json()["id"], endpoint)
    assert made.status_code == 200, made.text
    return made.json()


def wait_for(server: LiveServer, key: str, batch_id: str, statuses=("completed", "failed", "expired", "cancelled"),
             timeout_s: float = 30.0) -> dict:
    deadline, pause = time.monotonic() + timeout_s, 0.05
    while True:
        body = httpx.get(f"{server.url}/v1/batches/{batch_id}", headers=auth(key), timeout=30).json()
        if body["status"] in statuses or time.monotonic() > deadline:
            return body
        # Backing off to half a second: each poll is a request through the app (~25 ms of CPU), and a batch paused
        # by its rate limit for seconds was polled 20 times a second, on cores the other test worker needs.
        time.sleep(pause)
        pause = min(pause * 1.5, 0.5)


def content(server: LiveServer, key: str, file_id: str) -> list[dict]:
    r = httpx.get(f"{server.url}/v1/files/{file_id}/content", headers=auth(key), timeout=30)
    assert r.status_code == 200, r.text
    return [json.loads(line) for line in r.text.splitlines()]
