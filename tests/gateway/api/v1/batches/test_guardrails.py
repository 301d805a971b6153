"""Batch API lines run the chat pipeline's guardrails: a blocked line lands in the error file as a 400
content_blocked, a redacted one reaches the model masked."""
from __future__ import annotations

import httpx

from tests.gateway.api.v1.batches.conftest import batch_of, chat_line, content, serve, wait_for
from tests.gateway.support import ADMIN_KEY, CannedBackend, make_tenant


class Recording(CannedBackend):
    def __init__(self) -> None:
        super().__init__(tokens=2)
        self.prompts: list[str] = []

    def stream(self, request):
        self.prompts.append(request.messages[-1]["content"])
        return super().stream(request)


def test_guardrails_apply_to_batch_lines(db):
    tenant_id, key = make_tenant(db[1])
    backend = Recording()
    with serve(db, backend) as server:
        r = httpx.put(f"{server.url}/admin/tenants/{tenant_id}/guardrails", timeout=30,
                      headers={"Authorization": f"Bearer {ADMIN_KEY}"}, json=[
                          {"name": "no-forbidden", "stage": "input", "kind": "deny_pattern", "pattern": "forbidden",
                           "mode": "block"},
                          {"name": "pii-in", "stage": "input", "kind": "pii", "entities": ["email"], "mode": "redact"}])
        assert r.status_code == 200, r.text
        lines = [chat_line(0, messages=[{"role": "user", "content": "a forbidden ask"}]),
                 chat_line(1, messages=[{"role": "user", "content": "mail ann@example.org"}])]
        done = wait_for(server, key, batch_of(server, key, lines)["id"])
        assert done["request_counts"] == {"total": 2, "completed": 1, "failed": 1}
        (error,) = content(server, key, done["error_file_id"])
        assert error["custom_id"] == "req-0" and error["response"]["status_code"] == 400
        assert error["response"]["body"]["error"]["code"] == "content_blocked"
        assert backend.prompts == ["mail [EMAIL]"]
