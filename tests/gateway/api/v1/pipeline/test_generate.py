"""What the engines learn of who is asking: an opaque fair-share key and weight, and a priority the tenant's
plan bounds from below; never the tenant's identity."""
from __future__ import annotations

import httpx
import pytest

from gateway.main import create_app
from tests.gateway.conftest import gateway_settings
from tests.gateway.support import CannedBackend, LiveServer, make_tenant, migrate_and_seed

MODEL = "smollm2-135m-instruct"


class RecordingBackend(CannedBackend):
    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.requests = []

    async def stream(self, request):
        self.requests.append(request)
        async for chunk in super().stream(request):
            yield chunk


@pytest.fixture(scope="module")
def live(tmp_path_factory, gw_catalogue):
    tmp = tmp_path_factory.mktemp("generate")
    url = f"sqlite:///{tmp / 'tollgate.db'}"
    migrate_and_seed(url, gw_catalogue)
    backend = RecordingBackend(tokens=2)
    with LiveServer(create_app(gateway_settings(tmp, url), backend=backend)) as server:
        yield server, backend, url


def _ask(server, key, **extra):
    r = httpx.post(f"{server.url}/v1/chat/completions", headers={"Authorization": f"Bearer {key}"}, timeout=30,
                   json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2, **extra})
    assert r.status_code == 200, r.text
    return r


def test_each_tenant_has_its_own_opaque_key_and_weight(live):
    server, backend, url = live
    a_id, a_key = make_tenant(url, share_weight=3.0)
    b_id, b_key = make_tenant(url)
    _ask(server, a_key)
    _ask(server, a_key)
    _ask(server, b_key)
    a1, a2, b = backend.requests[-3:]
    assert a1.tenant == a2.tenant != b.tenant and a1.tenant != a1.cache_salt
    assert a_id not in a1.tenant and b_id not in b.tenant and len(a1.tenant) == 32
    assert (a1.tenant_weight, b.tenant_weight) == (3.0, 1.0)


def test_a_request_may_lower_its_priority_but_not_rise_above_its_plan(live):
    server, backend, url = live
    _, key = make_tenant(url, priority=5)
    _ask(server, key)
    _ask(server, key, priority=9)
    _ask(server, key, priority=-3)
    assert [r.priority for r in backend.requests[-3:]] == [5, 9, 5]


def test_priority_out_of_range_is_a_400(live):
    server, _, url = live
    _, key = make_tenant(url)
    r = httpx.post(f"{server.url}/v1/chat/completions", headers={"Authorization": f"Bearer {key}"}, timeout=30,
                   json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "priority": 5000})
    assert r.status_code == 400 and r.json()["error"]["param"] == "priority"


def test_a_request_may_opt_out_of_speculative_decoding(live):
    server, backend, url = live
    _, key = make_tenant(url)
    _ask(server, key)
    _ask(server, key, speculative=False)
    assert [r.speculative for r in backend.requests[-2:]] == [True, False]
    r = httpx.post(f"{server.url}/v1/chat/completions", headers={"Authorization": f"Bearer {key}"}, timeout=30,
                   json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "speculative": "no"})
    assert r.status_code == 400 and r.json()["error"]["param"] == "speculative"
