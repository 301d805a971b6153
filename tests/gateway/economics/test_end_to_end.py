"""Metered engine time and replica-minutes from the real gateway (SmolLM2 fp32 in process) into the report."""
from decimal import Decimal

import httpx
import pytest

from gateway.db.types import utcnow
from gateway.domain.period import Month
from tests.gateway.support import ADMIN_KEY, FP32, make_tenant, wait_usage_rows

pytestmark = pytest.mark.model


def test_requests_carry_engine_ms_into_the_ledger_and_the_report(real_gateway):
    server, settings = real_gateway
    url = settings.resolved_database_url
    # Cache off: both requests must reach the engine (a max_tokens-cut answer is cacheable now).
    tenant_id, key = make_tenant(url, cache_enabled=False)
    h = {"Authorization": f"Bearer {key}"}
    body = {"model": "smollm2-135m-instruct", "messages": [{"role": "user", "content": "Count to five."}],
            "max_tokens": 8, "temperature": 0}
    assert httpx.post(f"{server.url}/v1/chat/completions", json=body, headers=h, timeout=60).status_code == 200
    with httpx.stream("POST", f"{server.url}/v1/chat/completions", json={**body, "stream": True}, headers=h,
                      timeout=60) as r:
        assert r.status_code == 200 and "[DONE]" in r.read().decode()
    rows = wait_usage_rows(url, tenant_id, 2)
    assert len(rows) == 2 and all(r.engine_ms > 0 and r.version == FP32 for r in rows)

    month = str(Month.containing(utcnow()))
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    report = httpx.get(f"{server.url}/admin/economics", params={"month": month}, headers=admin, timeout=60).json()
    model = next(m for m in report["models"] if m["model"] == "smollm2-135m-instruct")
    fp32 = next(v for v in model["versions"] if v["version"] == FP32)
    assert Decimal(fp32["replica_hours"]) > 0  # the recorder sampled the in-process engine at start-up
    assert (fp32["hardware"], fp32["per_replica_hour"]) == ("2 vCPU", "0.085")  # the catalogue's baseline
    mine = next(t for t in report["tenants"] if t["tenant_id"] == tenant_id)
    expected = sum(Decimal(repr(r.engine_ms)) for r in rows) / 3_600_000 * Decimal("0.085")
    assert abs(Decimal(mine["attributed_cost"]) - expected) <= Decimal("0.000000001")
    totals = report["totals"]
    assert totals["unallocated_cost"] == "0"  # tenants carry the whole cost
    assert sum(Decimal(t["cost"]) for t in report["tenants"]) == Decimal(totals["cost"]) == \
        sum(Decimal(m["cost"]) for m in report["models"])
    assert sum(Decimal(t["revenue"]) for t in report["tenants"]) == Decimal(totals["revenue"])
