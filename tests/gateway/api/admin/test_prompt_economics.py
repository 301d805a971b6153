"""GET /admin/economics?group_by=prompt_version: the report's cost, carried by stored prompt versions the way
tenants carry it; without group_by the report is as before."""
from datetime import UTC, datetime

from gateway.billing.ledger import UsageRecord
from gateway.crud.replica_minutes import record_replica_minute
from tests.gateway.data_fixtures import ADMIN, assert_openai_error, new_tenant_key

MODEL = "smollm2-135m-instruct"
FP32 = f"{MODEL}@fp32"


async def test_economics_by_prompt_version(admin_http, data_services):
    await admin_http.put(f"/admin/versions/{FP32}/cost", headers=ADMIN,
                         json={"per_replica_hour": "0.36", "effective_from": "2026-01-01T00:00:00Z"})
    tenant, key = await new_tenant_key(admin_http, "a")

    def row(n, engine_ms, **kw):
        return UsageRecord(request_id=f"p{n}", tenant_id=tenant, key_id=key["id"], endpoint="/v1/chat/completions",
                           model=MODEL, prompt_tokens=100, completion_tokens=100, engine_ms=engine_ms,
                           created_at=datetime(2026, 11, 10, 12, n, tzinfo=UTC), **kw)

    ledger = data_services.ledger
    ledger.record(row(1, 600_000.0, version=FP32, prompt_version="greet:1"))  # 10 engine-minutes
    ledger.record(row(2, 1_200_000.0, version=FP32, prompt_version="greet:2"))  # 20 engine-minutes
    ledger.record(row(3, 0.0, cache_hit=True))  # no prompt, no engine
    await ledger.flush()
    with data_services.database.engine.begin() as conn:
        for m in range(100):
            record_replica_minute(conn, pool="inprocess:test", counts={FP32: 1},
                                  minute=datetime(2026, 11, 10, 11 + m // 60, m % 60, tzinfo=UTC))

    plain = (await admin_http.get("/admin/economics?month=2026-11", headers=ADMIN)).json()
    assert "prompt_versions" not in plain and "group_by" not in plain
    r = await admin_http.get("/admin/economics?month=2026-11&group_by=prompt_version", headers=ADMIN)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["tenants"] == plain["tenants"] and body["totals"] == plain["totals"]
    by = {p["prompt_version"]: p for p in body["prompt_versions"]}
    assert set(by) == {"greet:1", "greet:2", None}
    # 0.6 of replica time: 0.06 + 0.12 attributed, the idle 0.42 shared by attributed cost (1:2).
    assert (by["greet:1"]["attributed_cost"], by["greet:1"]["cost"]) == ("0.06", "0.2")
    assert (by["greet:2"]["attributed_cost"], by["greet:2"]["cost"]) == ("0.12", "0.4")
    assert by[None]["requests"] == 1 and by[None]["cost"] == "0"
    assert_openai_error(await admin_http.get("/admin/economics?group_by=model", headers=ADMIN), 400)
    assert_openai_error(await admin_http.get("/admin/economics?group_by=prompt_version&format=csv", headers=ADMIN),
                        400, param="group_by")
