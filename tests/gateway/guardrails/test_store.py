"""The rule store: a tenant's rules are read once per TTL, a saved change is seen at once where it was saved
(invalidate) and within the TTL elsewhere."""
import pytest

import gateway.db.models  # noqa: F401  (registers the tables)
from gateway.crud.guardrails import set_rules
from gateway.crud.tenants import create_tenant
from gateway.db.base import Base
from gateway.db.database import Database
from gateway.guardrails.store import GuardrailStore, StoreConfig

RULE = {"name": "r", "stage": "input", "kind": "deny_pattern", "pattern": "x", "mode": "block"}


@pytest.fixture
def db(tmp_path):
    database = Database(f"sqlite:///{tmp_path / 'g.db'}")
    Base.metadata.create_all(database.engine)
    yield database
    database.dispose()


def save(db: Database, tenant_id: str, rules: list[dict]) -> None:
    with db.session() as session:
        set_rules(session, tenant_id=tenant_id, rules=rules)


async def test_rules_are_cached_for_the_ttl_and_invalidate_drops_them(db):
    with db.session() as session:
        tenant_id = create_tenant(session, name="t").id
    here, elsewhere = GuardrailStore(db, StoreConfig(ttl_s=60)), GuardrailStore(db, StoreConfig(ttl_s=0))
    assert await here.rules_for(tenant_id) == () and await elsewhere.rules_for(tenant_id) == ()
    save(db, tenant_id, [RULE])
    assert await here.rules_for(tenant_id) == ()  # cached
    assert [r.name for r in await elsewhere.rules_for(tenant_id)] == ["r"]  # TTL passed
    here.invalidate(tenant_id)
    assert [r.to_dict() for r in await here.rules_for(tenant_id)] == [RULE]


def test_config_is_checked():
    with pytest.raises(ValueError):
        StoreConfig(ttl_s=-1)


async def test_a_burst_of_requests_shares_one_read_and_an_invalidate_is_not_undone_by_it(db, monkeypatch):
    import asyncio

    with db.session() as session:
        tenant_id = create_tenant(session, name="t").id
    store, reads = GuardrailStore(db, StoreConfig(ttl_s=60)), []
    read = store._read

    def counted(tid):
        reads.append(tid)
        return read(tid)

    monkeypatch.setattr(store, "_read", counted)
    assert all(r == () for r in await asyncio.gather(*(store.rules_for(tenant_id) for _ in range(50))))
    assert len(reads) == 1

    store._cached.clear()
    stale = asyncio.ensure_future(store.rules_for(tenant_id))  # a read begun before the change...
    await asyncio.sleep(0)
    save(db, tenant_id, [RULE])
    store.invalidate(tenant_id)  # ...is not cached over it: the next request reads the new rules
    await stale
    assert [r.name for r in await store.rules_for(tenant_id)] == ["r"]
