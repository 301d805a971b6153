"""Batch API lines pass the same output caps as interactive requests: a line over a `reject` cap lands in the
error file as a 400 naming the cap, a line under `clamp` runs at the cap and its ledger row records the clamp."""
from __future__ import annotations

from tests.gateway.api.v1.batches.conftest import batch_of, chat_line, content, serve, wait_for
from tests.gateway.support import CannedBackend, make_tenant, wait_usage_rows


def test_batch_lines_meet_the_output_cap(db):
    rejecting, reject_key = make_tenant(db[1], max_output_tokens=8)
    clamping, clamp_key = make_tenant(db[1], max_output_tokens=8, output_cap_mode="clamp", default_max_tokens=4)
    with serve(db, CannedBackend(tokens=50)) as server:
        lines = [chat_line(0, max_tokens=20), chat_line(1, max_tokens=8)]
        done = wait_for(server, reject_key, batch_of(server, reject_key, lines)["id"])
        assert done["request_counts"] == {"total": 2, "completed": 1, "failed": 1}
        (error,) = content(server, reject_key, done["error_file_id"])
        assert error["custom_id"] == "req-0" and error["response"]["status_code"] == 400
        assert error["response"]["body"]["error"]["param"] == "max_tokens"
        assert error["response"]["body"]["error"]["code"] == "max_output_tokens_exceeded"

        lines = [chat_line(0, max_tokens=20), chat_line(1)]
        done = wait_for(server, clamp_key, batch_of(server, clamp_key, lines)["id"])
        assert done["request_counts"] == {"total": 2, "completed": 2, "failed": 0}
        out = {o["custom_id"]: o["response"]["body"]["usage"]["completion_tokens"]
               for o in content(server, clamp_key, done["output_file_id"])}
        assert out == {"req-0": 8, "req-1": 4}  # clamped to the cap; the default where none was named
    rows = wait_usage_rows(db[1], clamping, 2)
    assert sorted(((r.kind, r.max_tokens_asked, r.max_tokens_cap) for r in rows), key=str) == [
        ("batch", 20, 8), ("batch", None, None)]
    assert len(wait_usage_rows(db[1], rejecting, 1)) == 1  # the refused line is not billed
