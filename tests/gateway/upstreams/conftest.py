"""Real upstream servers for the tests: an OpenAI-protocol process (fake_openai) and the fake Anthropic Messages
server (one per session, its script and record cleared for each test)."""
from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from gateway.observability.logging import JSONFormatter
from tests.gateway.support import free_port
from tests.gateway.upstreams.fake_anthropic import FakeAnthropic


class Captured(logging.Handler):
    """Every log line, formatted as the gateway writes them (JSON with extras): where a canary key must not show."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(JSONFormatter())
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))

UPSTREAM_KEY = "sk-upstream-key-CANARY-0d9f8e7a6b"  # what the gateway sends the fake upstream
WRONG_KEY = "sk-wrong-key-CANARY-5c4b3a2910"  # an upstream configured with a key the fake refuses
ROOT = Path(__file__).resolve().parents[3]


class UpstreamProcess:
    """`python -m <module> PORT KEY` on a free port; `kill()` ends it (connections refused from then on)."""

    def __init__(self, module: str, key: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._proc = subprocess.Popen([sys.executable, "-m", module, str(self.port), key], cwd=ROOT,
                                      env={**os.environ, "PYTHONPATH": str(ROOT)})
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    break
            except OSError:
                if self._proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{module} did not start") from None
                time.sleep(0.05)

    def seen(self) -> list[dict]:
        return httpx.get(f"{self.url}/seen").json()

    def kill(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait(10)


@pytest.fixture(scope="module")
def fake_openai():
    proc = UpstreamProcess("tests.gateway.upstreams.fake_openai", UPSTREAM_KEY)
    yield proc
    proc.kill()


def write_catalogue(tmp: Path, base: Path, extra: dict) -> Path:
    """The default catalogue plus `extra`'s upstreams, models and aliases."""
    raw = yaml.safe_load(base.read_text())
    for section in ("upstreams", "models", "aliases", "embeddings"):
        raw.setdefault(section, {}).update(extra.get(section, {}))
    path = tmp / "catalogue.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))  # a model's first version is its default
    return path


@pytest.fixture(scope="session")
def fake_anthropic_server():
    with FakeAnthropic() as fake:
        yield fake


@pytest.fixture
def fake_anthropic(fake_anthropic_server):
    """The session's fake Anthropic server (url, API_KEY), with an empty script and no recorded requests."""
    fake_anthropic_server.reset()
    yield fake_anthropic_server
    fake_anthropic_server.reset()
