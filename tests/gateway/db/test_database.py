from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

from sqlalchemy import func, select, text

from gateway.db.database import Database, normalise_url
from gateway.db.models import Price, Tenant


def test_plain_postgres_urls_use_psycopg():
    assert normalise_url("postgresql://u@h/db") == "postgresql+psycopg://u@h/db"
    assert normalise_url("postgres://u@h/db") == "postgresql+psycopg://u@h/db"
    assert normalise_url("postgresql+psycopg://u@h/db") == "postgresql+psycopg://u@h/db"
    assert normalise_url("sqlite:///x.db") == "sqlite:///x.db"


def test_sqlite_uses_wal_and_foreign_keys(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'sub' / 'x.db'}")  # the folder is created
    with db.engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
    db.dispose()


def test_money_is_exact_and_sums_exactly(database):
    tiny = Decimal("0.0000000001")
    with database.session() as s:
        for i in range(10):
            s.add(Price(model="m", input_per_million=tiny, output_per_million=Decimal("0.1"),
                        effective_from=datetime(2026, 1, 1 + i, tzinfo=UTC)))
        s.commit()
        total_in, total_out = s.execute(select(func.sum(Price.input_per_million),
                                               func.sum(Price.output_per_million))).one()
    assert total_in == Decimal("0.000000001")
    assert total_out == Decimal("1")


def test_datetimes_come_back_aware_utc(database):
    paris = timezone(timedelta(hours=1))
    with database.session() as s:
        t = Tenant(name="a", created_at=datetime(2026, 3, 1, 12, 0, tzinfo=paris))
        s.add(t)
        s.commit()
        s.expire_all()
        got = s.get(Tenant, t.id).created_at
    assert got == datetime(2026, 3, 1, 11, 0, tzinfo=UTC) and got.utcoffset() == timedelta(0)


def test_tenant_defaults(database):
    with database.session() as s:
        t = Tenant(name="defaults")
        s.add(t)
        s.commit()
        assert (t.status, t.cache_enabled, t.cache_allow_sampling, t.rpm, t.monthly_token_budget) == (
            "active", True, False, None, None)
        assert len(t.id) == 36
