"""GET /admin/economics (JSON and CSV) and the replica-hour price history behind it."""
import csv
import io
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from gateway.billing.ledger import UsageRecord
from gateway.crud.replica_minutes import record_replica_minute
from gateway.economics.csv_export import CSV_COLUMNS
from tests.gateway.data_fixtures import ADMIN, assert_openai_error, new_tenant_key

MODEL = "smollm2-135m-instruct"
FP32 = f"{MODEL}@fp32"


async def test_version_cost_history(admin_http):
    r = await admin_http.put(f"/admin/versions/{FP32}/cost", headers=ADMIN,
                             json={"per_replica_hour": "0.5", "hardware": "2 vCPU",
                                   "effective_from": "2026-01-01T00:00:00Z"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["per_replica_hour"], body["hardware"], body["current"]) == ("0.5", "2 vCPU", True)
    assert body["set_by"].startswith("admin:")
    r = await admin_http.put(f"/admin/versions/{FP32}/cost", headers=ADMIN, json={"per_replica_hour": "0.75"})
    assert r.json()["hardware"] == "2 vCPU"  # kept from the previous price
    listed = (await admin_http.get("/admin/versions/costs", headers=ADMIN)).json()["data"]
    assert [(c["per_replica_hour"], c["current"]) for c in listed] == [("0.5", False), ("0.75", True)]
    audit = (await admin_http.get("/admin/audit", headers=ADMIN, params={"action": "version_cost.set"})).json()
    newest, first = audit["data"]
    assert (newest["target"], newest["actor"]) == ({"type": "version_cost", "id": FP32}, body["set_by"])
    assert first["before"] is None and Decimal(first["after"]["per_replica_hour"]) == Decimal("0.5")
    assert Decimal(newest["before"]["per_replica_hour"]) == Decimal("0.5")
    assert Decimal(newest["after"]["per_replica_hour"]) == Decimal("0.75")


async def test_version_cost_refusals(admin_http):
    assert_openai_error(await admin_http.put("/admin/versions/nope@x/cost", headers=ADMIN,
                                             json={"per_replica_hour": "1"}), 404)
    assert_openai_error(await admin_http.put(f"/admin/versions/{FP32}/cost", headers=ADMIN,
                                             json={"per_replica_hour": "-1"}), 400)
    assert_openai_error(await admin_http.put(f"/admin/versions/{FP32}/cost", headers=ADMIN,
                                             json={"per_replica_hour": "1", "typo": 1}), 400)
    assert_openai_error(await admin_http.put(f"/admin/versions/{FP32}/cost", headers=ADMIN,
                                             json={"per_replica_hour": "1", "hardware": "a\x00b"}), 400)
    assert (await admin_http.get("/admin/versions/costs")).status_code == 401


@pytest.fixture
async def month_of_traffic(admin_http, data_services):
    """Two tenants on fp32 (0.36 per replica-hour), one replica up for 100 minutes of November 2026."""
    r = await admin_http.put(f"/admin/versions/{FP32}/cost", headers=ADMIN,
                             json={"per_replica_hour": "0.36", "hardware": "2 vCPU",
                                   "effective_from": "2026-01-01T00:00:00Z"})
    assert r.status_code == 200
    a, ka = await new_tenant_key(admin_http, "a")
    b, kb = await new_tenant_key(admin_http, "b")

    def row(n, tenant, key, engine_ms, completion, **kw):
        return UsageRecord(request_id=f"e{n}", tenant_id=tenant, key_id=key, endpoint="/v1/chat/completions",
                           model=MODEL, prompt_tokens=1000, completion_tokens=completion, engine_ms=engine_ms,
                           created_at=datetime(2026, 11, 10, 12, n, tzinfo=UTC), **kw)

    ledger = data_services.ledger
    ledger.record(row(1, a, ka["id"], 600_000.0, 1000, version=FP32))  # 10 engine-minutes: 0.06
    ledger.record(row(2, b, kb["id"], 1_200_000.0, 3000, version=FP32))  # 20 engine-minutes: 0.12
    ledger.record(row(3, b, kb["id"], 0.0, 50, cache_hit=True))  # a semantic-cache hit
    await ledger.flush()
    with data_services.database.engine.begin() as conn:
        for m in range(100):
            minute = datetime(2026, 11, 10, 11 + m // 60, m % 60, tzinfo=UTC)
            record_replica_minute(conn, pool="inprocess:test", minute=minute, counts={FP32: 1})
    return a, b


async def test_economics_report(admin_http, month_of_traffic):
    a, b = month_of_traffic
    r = await admin_http.get("/admin/economics?month=2026-11", headers=ADMIN)
    assert r.status_code == 200, r.text
    body = r.json()
    [model] = body["models"]
    fp32 = next(v for v in model["versions"] if v["version"] == FP32)
    # 100 replica-minutes at 0.36/h = 0.6; 30 engine-minutes = 0.18 attributed; 0.42 idle
    assert (fp32["serving_cost"], fp32["attributed_cost"], fp32["idle_cost"]) == ("0.6", "0.18", "0.42")
    assert (fp32["replica_hours"], fp32["utilisation"]) == ("1.666667", "0.3")
    assert fp32["cost_per_million_output_tokens"] == "150"  # 0.6 / 4000 tokens
    # 4000 tokens in 1800 busy seconds; at 60% a replica-hour yields 4800 tokens: 0.36 / 4800 * 1e6
    assert fp32["break_even_per_million_output_tokens"] == "75"
    tenants = {t["tenant_id"]: t for t in body["tenants"]}
    assert (tenants[a]["attributed_cost"], tenants[a]["idle_cost"], tenants[a]["cost"]) == ("0.06", "0.14", "0.2")
    assert (tenants[b]["attributed_cost"], tenants[b]["idle_cost"], tenants[b]["cost"]) == ("0.12", "0.28", "0.4")
    totals = body["totals"]
    assert totals["cost"] == "0.6" and totals["revenue"] == model["revenue"]
    r = await admin_http.get("/admin/economics?month=2026-11&utilisation=0.9&throughput=1", headers=ADMIN)
    fp32 = next(v for v in r.json()["models"][0]["versions"] if v["version"] == FP32)
    assert fp32["break_even_per_million_output_tokens"] == "111.1111111111"  # 0.36 / (3600 * 0.9) * 1e6


async def test_economics_csv(admin_http, month_of_traffic):
    for url in ("/admin/economics.csv?month=2026-11", "/admin/economics?month=2026-11&format=csv"):
        r = await admin_http.get(url, headers=ADMIN)
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
        table = list(csv.DictReader(io.StringIO(r.text)))
        assert tuple(table[0]) == CSV_COLUMNS
        assert [row["level"] for row in table] == ["version", "version", "model", "tenant", "tenant", "total"]
        assert table[0]["version"] == FP32 and table[0]["serving_cost"] == "0.6"
        assert table[-1]["cost"] == "0.6"


@pytest.mark.parametrize("query, param", [
    ("month=2026-13", "month"), ("month=nope", "month"), ("utilisation=0", "utilisation"),
    ("utilisation=abc", "utilisation"), ("utilisation=NaN", "utilisation"), ("throughput=-5", "throughput"),
    ("throughput=1e400", "throughput"), ("format=xml", "format")])
async def test_bad_parameters_are_400s(admin_http, query, param):
    assert_openai_error(await admin_http.get(f"/admin/economics?{query}", headers=ADMIN), 400, param=param)


async def test_an_empty_month_and_auth(admin_http):
    body = (await admin_http.get("/admin/economics?month=1999-01", headers=ADMIN)).json()
    assert body["models"] == [] and body["tenants"] == [] and body["totals"]["cost"] == "0"
    assert (await admin_http.get("/admin/economics")).status_code == 401
    assert (await admin_http.get("/admin/economics.csv")).status_code == 401
