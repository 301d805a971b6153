"""Uploads and batch creation are requests like any other: they count against the tenant's RPM, and a tenant
has at most TOLLGATE_FILES_MAX_CONCURRENT_UPLOADS uploads in progress at once (the slot is held while the body
arrives)."""
import socket
import time
from urllib.parse import urlsplit

from tests.gateway.api.v1.batches.conftest import chat_line, create, jsonl, serve, upload
from tests.gateway.data_fixtures import assert_openai_error
from tests.gateway.support import CannedBackend, make_tenant


def test_uploads_and_batch_creation_count_against_the_rpm(db):
    _, key = make_tenant(db[1], rpm=2)
    with serve(db, CannedBackend(), batch_runner_enabled=False) as server:
        first = upload(server, key, jsonl([chat_line(0)]))
        assert first.status_code == 200, first.text
        assert create(server, key, first.json()["id"]).status_code == 200
        assert_openai_error(upload(server, key, jsonl([chat_line(0)])), 429, code="rate_limit_exceeded")
        assert_openai_error(create(server, key, first.json()["id"]), 429, code="rate_limit_exceeded")


def test_a_tenant_has_one_upload_in_progress_at_a_time_others_are_unaffected(db):
    _, key = make_tenant(db[1])
    _, other = make_tenant(db[1])
    with serve(db, CannedBackend(), batch_runner_enabled=False, files_max_concurrent_uploads=1) as server:
        host, port = urlsplit(server.url).hostname, urlsplit(server.url).port
        with socket.create_connection((host, port), timeout=10) as slow:  # headers sent, the body trickling
            slow.sendall(f"POST /v1/files HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\n"
                         "Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 100000\r\n\r\n--b\r\n"
                         .encode())
            deadline = time.monotonic() + 10
            while True:  # until the slow upload holds the tenant's slot
                r = upload(server, key, jsonl([chat_line(0)]))
                if r.status_code == 429 or time.monotonic() > deadline:
                    break
            assert_openai_error(r, 429, code="too_many_concurrent_uploads")
            assert upload(server, other, jsonl([chat_line(0)])).status_code == 200
        deadline = time.monotonic() + 10
        while (r := upload(server, key, jsonl([chat_line(0)]))).status_code == 429 and time.monotonic() < deadline:
            time.sleep(0.05)  # the server notices the dropped connection and gives the slot back
        assert r.status_code == 200, r.text
