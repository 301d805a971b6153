"""Bounded batch output over HTTP: with TOLLGATE_BATCH_MAX_OUTPUT_BYTES=1000000, an embeddings batch whose
answers would fill several megabytes ends with an output file under the limit, the lines past it in the error
file as output_limit_exceeded, and the batch's errors naming the limit; a line larger than the per-line limit is
refused alone; a tenant's remaining file quota lowers the limit."""
import json

import httpx
import numpy as np

from gateway.db.database import Database
from gateway.db.models.tenant import Tenant
from tests.gateway.api.v1.batches.conftest import auth, batch_of, serve, wait_for
from tests.gateway.support import CannedBackend, make_tenant, migrate_and_seed

EMBED_MODEL = "all-minilm-l6-v2"


class WideEmbedder:
    """MiniLM's width (384) with short numbers: about 1.5 kB of JSON per input, 300 kB per 200-input line."""

    def embed(self, texts):
        return np.full((len(texts), 384), 0.5, dtype=np.float32)

    def count_tokens(self, texts) -> int:
        return sum(len(t.split()) for t in texts)


def lines(n: int, inputs: int) -> list[dict]:
    return [{"custom_id": f"e{i}", "method": "POST", "url": "/v1/embeddings",
             "body": {"model": EMBED_MODEL, "input": [f"text {i} {j}" for j in range(inputs)]}} for i in range(n)]


def raw(server, key: str, file_id: str | None) -> bytes:
    if file_id is None:
        return b""
    r = httpx.get(f"{server.url}/v1/files/{file_id}/content", headers=auth(key), timeout=30)
    assert r.status_code == 200, r.text
    return r.content


def own_db(tmp_path, gw_catalogue):
    db = (tmp_path, f"sqlite:///{tmp_path / 'own.db'}")
    migrate_and_seed(db[1], gw_catalogue)
    return db


def test_a_batch_stops_writing_at_its_output_limit_and_says_which(tmp_path, gw_catalogue):
    db = own_db(tmp_path, gw_catalogue)
    _, key = make_tenant(db[1])
    with serve(db, CannedBackend(), embeddings_enabled=True, embedder=WideEmbedder(),
               batch_max_output_bytes=1_000_000) as server:
        done = wait_for(server, key, batch_of(server, key, lines(12, 200), "/v1/embeddings")["id"])
        out, errors = raw(server, key, done["output_file_id"]), raw(server, key, done["error_file_id"])
    assert done["status"] == "completed", done
    assert 0 < len(out) <= 1_000_000
    written = [json.loads(x) for x in out.splitlines()]
    refused = [json.loads(x) for x in errors.splitlines()]
    assert len(written) + len(refused) == 12 and len(written) == done["request_counts"]["completed"] == 3
    assert {e["error"]["code"] for e in refused} == {"output_limit_exceeded"} and refused[0]["response"] is None
    assert "TOLLGATE_BATCH_MAX_OUTPUT_BYTES" in refused[0]["error"]["message"]
    assert sorted(e["custom_id"] for e in written + refused) == sorted(f"e{i}" for i in range(12))
    (error,) = done["errors"]["data"]
    assert error["code"] == "output_limit_exceeded" and "1000000 bytes (TOLLGATE_BATCH_MAX_OUTPUT_BYTES)" in error[
        "message"]


def test_a_line_over_the_per_line_limit_is_refused_alone_and_the_quota_lowers_the_batch_limit(tmp_path,
                                                                                               gw_catalogue):
    db = own_db(tmp_path, gw_catalogue)
    _, key = make_tenant(db[1])
    small, big = lines(3, 2), lines(1, 200)
    big[0]["custom_id"] = "big"
    with serve(db, CannedBackend(), embeddings_enabled=True, embedder=WideEmbedder(),
               batch_max_line_output_bytes=100_000) as server:
        done = wait_for(server, key, batch_of(server, key, small[:1] + big + small[1:], "/v1/embeddings")["id"])
        refused = [json.loads(x) for x in raw(server, key, done["error_file_id"]).splitlines()]
        assert done["status"] == "completed" and done["request_counts"] == {"total": 4, "completed": 3, "failed": 1}
        assert [(e["custom_id"], e["error"]["code"]) for e in refused] == [("big", "output_limit_exceeded")]
        assert "TOLLGATE_BATCH_MAX_LINE_OUTPUT_BYTES" in done["errors"]["data"][0]["message"]

    tenant_id, key = make_tenant(db[1])
    database = Database(db[1])
    with database.session() as s:  # room for the input file and about one 300 kB line
        s.get(Tenant, tenant_id).files_max_bytes = 500_000
        s.commit()
    database.dispose()
    with serve(db, CannedBackend(), embeddings_enabled=True, embedder=WideEmbedder()) as server:
        done = wait_for(server, key, batch_of(server, key, lines(4, 200), "/v1/embeddings")["id"])
        assert done["request_counts"]["completed"] == 1, done
        assert "file storage quota" in done["errors"]["data"][0]["message"]
