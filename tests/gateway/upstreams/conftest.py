"""The fake Anthropic Messages server, one per session, its script and record cleared for each test."""
from __future__ import annotations

import pytest

from tests.gateway.upstreams.fake_anthropic import FakeAnthropic


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
