"""The gateway hashes what tenants send through every prompt endpoint (chat, completions, responses, messages) and
the waste report counts each request's longest prefix sent before in the month, exactly: the same system prompt
and question by another API is a repeat, a new question under the same system prompt repeats the system prompt."""
from __future__ import annotations

import time

import httpx

from gateway.main import create_app
from tests.gateway.conftest import gateway_settings
from tests.gateway.support import (
    ADMIN_KEY,
    FP32,
    CannedBackend,
    LiveServer,
    make_tenant,
    migrate_and_seed,
)

MODEL = "smollm2-135m-instruct"
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
SYSTEM = "You are the support desk of Acme Tools. Answer in one sentence. "


def tokens(*contents: str) -> int:
    """What the canned backend counts (and the ledger bills) for messages with these contents."""
    return CannedBackend._count(None, [{"content": c} for c in contents])


def waste_when(server, tenant_id: str, done) -> dict:
    """The month's report once `done(report)` (the hashing flushes in the background)."""
    deadline = time.monotonic() + 15
    while True:
        report = httpx.get(f"{server.url}/admin/tenants/{tenant_id}/waste", headers=ADMIN, timeout=10).json()
        if done(report) or time.monotonic() > deadline:
            return report
        time.sleep(0.05)


def test_every_prompt_endpoint_is_hashed_and_repeats_are_counted_exactly(tmp_path, gw_catalogue):
    url = f"sqlite:///{tmp_path / 'tollgate.db'}"
    migrate_and_seed(url, gw_catalogue)
    tenant_id, key = make_tenant(url)
    other_id, other_key = make_tenant(url)
    settings = gateway_settings(tmp_path, url, embeddings_enabled=False, cache_enabled=False, waste_flush_s=0.05)
    with LiveServer(create_app(settings, backend=CannedBackend(tokens=2, versions=[FP32]))) as server:
        def post(path: str, body: dict, credential: str = key) -> None:
            r = httpx.post(f"{server.url}{path}", json={"model": MODEL, **body}, timeout=30,
                           headers={"Authorization": f"Bearer {credential}"})
            assert r.status_code == 200, r.text

        asked = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Where is my parcel?"}]
        post("/v1/chat/completions", {"messages": asked, "max_tokens": 2})  # new
        post("/v1/messages", {"system": SYSTEM, "max_tokens": 2,  # the same prompt by another API
                              "messages": [{"role": "user", "content": "Where is my parcel?"}]})
        post("/v1/responses", {"instructions": SYSTEM, "input": "Can I pay by card?",  # the system prompt again
                               "max_output_tokens": 2})
        post("/v1/completions", {"prompt": "Acme tools catalogue, page one", "max_tokens": 2})  # new
        post("/v1/completions", {"prompt": "Acme tools catalogue, page one", "max_tokens": 2})  # again
        post("/v1/chat/completions", {"messages": asked, "max_tokens": 2}, other_key)  # another tenant's: new

        parcel, card = tokens(SYSTEM, "Where is my parcel?"), tokens(SYSTEM, "Can I pay by card?")
        page, system = tokens("Acme tools catalogue, page one"), tokens(SYSTEM)
        # every request written: the parcel prompt twice, the system prompt three times, the page twice
        report = waste_when(server, tenant_id, lambda r: sum(p["times_seen"] for p in r["longest_repeated"]) >= 7)
        assert report["hashed_input_tokens"] == 2 * parcel + card + 2 * page
        assert report["hashed_repeated_tokens"] == parcel + system + page
        assert report["hashed_repeated_share"] == round((parcel + system + page) / (2 * parcel + card + 2 * page), 6)
        assert report["distinct_prefixes"] == 4  # the parcel prompt, the card prompt, the system prompt, the page
        shown = {(p["kind"], p["preview"]): (p["tokens"], p["times_seen"]) for p in report["longest_repeated"]}
        assert shown == {("prompt", "Where is my parcel?"): (parcel, 2), ("system", SYSTEM.strip()): (system, 3),
                         ("prompt", "Acme tools catalogue, page one"): (page, 2)}

        other = waste_when(server, other_id, lambda r: r["distinct_prefixes"] >= 2)  # its prompt and system prompt
        assert (other["hashed_input_tokens"], other["hashed_repeated_tokens"], other["longest_repeated"]) == \
            (parcel, 0, [])
