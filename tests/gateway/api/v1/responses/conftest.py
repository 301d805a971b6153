"""A live app over a canned backend that counts every message's words (so a continuation's prompt shows the
conversation it carries) and remembers the messages each generation was given."""
from __future__ import annotations

import json

import httpx
import pytest

from gateway.main import create_app
from tests.gateway.conftest import gateway_settings
from tests.gateway.support import CannedBackend, LiveServer, migrate_and_seed

MODEL = "smollm2-135m-instruct"


class ConversationBackend(CannedBackend):
    """Prompt tokens: the words of every message, plus one per message (its role)."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.seen: list[list[dict]] = []  # the messages each generation got, in order

    @staticmethod
    def _count(prompt: str | None, messages: list[dict] | None) -> int:
        if messages is None:
            return max(1, len((prompt or "").split()))
        return sum(1 + len(m["content"].split()) for m in messages)

    async def stream(self, request):
        self.seen.append(request.messages)
        async for chunk in super().stream(request):
            yield chunk


@pytest.fixture(scope="module")
def db(tmp_path_factory, gw_catalogue):
    tmp = tmp_path_factory.mktemp("responses")
    url = f"sqlite:///{tmp / 'tollgate.db'}"
    migrate_and_seed(url, gw_catalogue)
    return tmp, url


def serve(db, backend: CannedBackend | None = None, **settings) -> LiveServer:
    tmp, url = db
    settings = gateway_settings(tmp, url, embeddings_enabled=False, cache_enabled=False, **settings)
    return LiveServer(create_app(settings, backend=backend or ConversationBackend()))


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def create(server: LiveServer, key: str, **body) -> httpx.Response:
    return httpx.post(f"{server.url}/v1/responses", json={"model": MODEL, **body}, headers=auth(key), timeout=30)


def sse(raw: str) -> list[dict]:
    """The events of a Responses stream: each `event:` name must match its data's type."""
    out = []
    for block in raw.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        data = json.loads(lines["data"])
        assert lines["event"] == data["type"]
        out.append(data)
    return out


def stream(server: LiveServer, key: str, **body) -> tuple[httpx.Response, list[dict]]:
    with httpx.stream("POST", f"{server.url}/v1/responses", json={"model": MODEL, **body, "stream": True},
                      headers=auth(key), timeout=30) as r:
        raw = r.read().decode()
    return r, sse(raw) if r.status_code == 200 else []
