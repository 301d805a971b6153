"""Ledger sums per time bucket, computed in the database, the same on SQLite and PostgreSQL."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from gateway.crud.tenants import create_tenant
from gateway.crud.usage_buckets import first_token_times, usage_buckets
from gateway.db.models.usage import Usage

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _row(n: int, tenant_id: str, seconds: float, *, status="ok", hit=False, ttft=50.0, cost="0.0000001") -> Usage:
    return Usage(request_id=f"r{n}", tenant_id=tenant_id, endpoint="chat", model="m", prompt_tokens=3,
                 completion_tokens=5, cost=Decimal(cost), currency="USD", status=status, cache_hit=hit,
                 ttft_ms=None if hit else ttft, created_at=T0 + timedelta(seconds=seconds))


def test_sums_per_bucket_and_first_token_times(database):
    with database.session() as session:
        a = create_tenant(session, name="a").id
        b = create_tenant(session, name="b").id
        session.add_all([_row(1, a, 0.5, ttft=10), _row(2, a, 59.999, status="error", ttft=30),
                         _row(3, a, 60.0, hit=True), _row(4, b, 130, cost="0.25"),
                         _row(5, a, -0.001), _row(6, a, 180)])  # outside [T0, T0 + 3 min)
        session.commit()
        end = T0 + timedelta(minutes=3)
        sums = usage_buckets(session, start=T0, end=end, step_s=60)
        assert [(s.index, s.requests, s.errors, s.cache_hits, s.completion_tokens) for s in sums] == [
            (0, 2, 1, 0, 10), (1, 1, 0, 1, 5), (2, 1, 0, 0, 5)]
        assert [s.cost for s in sums] == [Decimal("0.0000002"), Decimal("0.0000001"), Decimal("0.25")]  # exact
        assert sorted(first_token_times(session, start=T0, end=end, step_s=60)) == [(0, 10.0), (0, 30.0), (2, 50.0)]
        mine = usage_buckets(session, start=T0, end=end, step_s=60, tenant_id=b)
        assert [(s.index, s.requests) for s in mine] == [(2, 1)]
        day = usage_buckets(session, start=T0 - timedelta(hours=12), end=T0 + timedelta(hours=12), step_s=86400)
        assert [(s.index, s.requests, s.prompt_tokens) for s in day] == [(0, 6, 18)]
