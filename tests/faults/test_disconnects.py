"""A client that leaves, at any point, aborts its generation in the engine, releases its reservation and is
billed exactly what was produced; the in-flight count returns to zero."""
from __future__ import annotations

import socket
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from gateway.catalogue import load_catalogue
from gateway.main import create_app
from gateway.settings import Settings
from tests.gateway.conftest import gateway_settings
from tests.gateway.support import CannedBackend, LiveServer, make_tenant, migrate_and_seed, usage_rows

BODY = {"model": "smollm2-135m-instruct", "messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 40}


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("disconnects")
    url = f"sqlite:///{tmp / 'tollgate.db'}"
    migrate_and_seed(url, load_catalogue(Settings().catalogue))
    return tmp, url


def serve(db, backend) -> LiveServer:
    tmp, url = db
    return LiveServer(create_app(gateway_settings(tmp, url, embeddings_enabled=False, cache_enabled=False),
                                 backend=backend))


def wait_until(predicate, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.02)


def settled(server) -> bool:
    services = server.server.config.app.state.services
    return services.drain.inflight == 0


def leave_after(server, key: str, body: dict, read_bytes: int, wait_s: float = 0.0) -> bytes:
    """Send a request on a raw socket, read `read_bytes` of the answer (0: none), wait, then drop it."""
    payload = httpx.Request("POST", f"{server.url}/v1/chat/completions", json=body,
                            headers={"Authorization": f"Bearer {key}"})
    raw = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
           f"Content-Type: application/json\r\nContent-Length: {len(payload.read())}\r\n\r\n").encode() + payload.read()
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(raw)
        got = b""
        while len(got) < read_bytes:
            chunk = sock.recv(4096)
            if not chunk:
                break
            got += chunk
        time.sleep(wait_s)
    return got


def test_leaving_a_whole_answer_midway_aborts_and_bills_what_was_made(db):
    tenant_id, key = make_tenant(db[1])
    backend = CannedBackend(tokens=40, delay_s=0.05)  # 2 s to finish
    with serve(db, backend) as server:
        leave_after(server, key, BODY, read_bytes=0, wait_s=0.5)
        wait_until(lambda: settled(server))
        assert len(backend.aborted) == 1  # the engine stopped generating at once
        wait_until(lambda: len(usage_rows(db[1], tenant_id)) == 1)
    (row,) = usage_rows(db[1], tenant_id)
    assert row.status == "aborted" and 0 < row.completion_tokens < 40


def test_leaving_a_stream_midway_aborts_and_bills_what_was_sent(db):
    tenant_id, key = make_tenant(db[1])
    backend = CannedBackend(tokens=40, delay_s=0.05)
    with serve(db, backend) as server:
        got = leave_after(server, key, {**BODY, "stream": True}, read_bytes=400)
        assert b"chat.completion.chunk" in got
        wait_until(lambda: settled(server))
        assert len(backend.aborted) == 1
        wait_until(lambda: len(usage_rows(db[1], tenant_id)) == 1)
    (row,) = usage_rows(db[1], tenant_id)
    assert row.status == "aborted" and 0 < row.completion_tokens < 40


@pytest.mark.parametrize("stream", [False, True])
def test_leaving_before_the_first_token_bills_nothing_and_holds_nothing(db, stream):
    tenant_id, key = make_tenant(db[1], tpm=200)
    backend = CannedBackend(tokens=4, first_delay_s=1.0)
    with serve(db, backend) as server:
        leave_after(server, key, {**BODY, "stream": stream}, read_bytes=0, wait_s=0.2)
        wait_until(lambda: settled(server))
        time.sleep(1.2)  # past the first token's delay: nothing may be billed late either
        assert usage_rows(db[1], tenant_id) == []
        # The reservation (prompt + 40 = 42 tokens) went back: four more at once fill the tenant's TPM (4 x 42 of
        # 200), so one left behind would refuse the fourth (sent one after another, each settles to 6 tokens
        # first and a held reservation would go unnoticed); side by side they also wait their first second once.
        with ThreadPoolExecutor(4) as pool:
            statuses = list(pool.map(lambda _: httpx.post(f"{server.url}/v1/chat/completions", json=BODY, timeout=30,
                                                          headers={"Authorization": f"Bearer {key}"}).status_code,
                                     range(4)))
        assert statuses == [200] * 4, statuses


def test_ten_streams_dropped_right_after_sending_are_all_settled(db):
    tenant_id, key = make_tenant(db[1])
    backend = CannedBackend(tokens=40, delay_s=0.02)
    with serve(db, backend) as server:
        for _ in range(10):
            leave_after(server, key, {**BODY, "stream": True}, read_bytes=0)
        wait_until(lambda: settled(server))
        time.sleep(1.0)
        rows = usage_rows(db[1], tenant_id)
    # Each either never reached the engine (nothing billed) or was aborted there and billed what it made.
    assert len(backend.aborted) == len(backend.served) and len(rows) <= len(backend.served)
    assert all(r.status == "aborted" and r.completion_tokens < 40 for r in rows)
