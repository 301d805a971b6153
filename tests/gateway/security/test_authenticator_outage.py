"""Keys while the database cannot be reached: known keys keep working for a grace period past
their TTL, unknown ones are a 503 to retry (never a 401, never a 500), and a revocation made
meanwhile takes effect on the first lookup that reaches the database again."""
import time
from datetime import timedelta

import httpx
import pytest
from sqlalchemy.exc import OperationalError, ProgrammingError

from gateway.crud.keys import create_key, get_key, revoke_key
from gateway.crud.tenants import create_tenant
from gateway.db.types import utcnow
from gateway.security.authenticator import AuthUnavailable, InvalidKey, KeyAuthenticator
from tests.gateway.data_fixtures import assert_openai_error, bearer


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Switch:
    """The authenticator's database, which can be made unreachable (or broken) and back."""

    def __init__(self, database) -> None:
        self.database, self.error, self.sessions = database, None, 0

    @property
    def engine(self):
        return self.database.engine

    def session(self):
        self.sessions += 1
        if self.error is not None:
            raise self.error
        return self.database.session()


DOWN = OperationalError("SELECT api_keys", {}, ConnectionRefusedError("connection refused"))


@pytest.fixture
def tenant_key(database):
    with database.session() as s:
        tenant = create_tenant(s, name="acme")
        key, secret = create_key(s, tenant_id=tenant.id)
    return tenant, key, secret


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def db(database):
    return Switch(database)


def authenticator(db, clock, **kw) -> KeyAuthenticator:
    return KeyAuthenticator(db, ttl_s=5, grace_s=60, retry_s=1, clock=clock, **kw)


async def test_a_known_key_works_through_an_outage_for_the_grace_period(db, clock, tenant_key):
    tenant, _, secret = tenant_key
    auth = authenticator(db, clock)
    await auth.authenticate(secret)
    db.error = DOWN
    clock.now += 5 + 59  # stale, within the grace period
    assert (await auth.authenticate(secret)).tenant_id == tenant.id
    clock.now += 2  # past TTL + grace
    with pytest.raises(AuthUnavailable) as e:
        await auth.authenticate(secret)
    assert e.value.retry_after_s >= 1


async def test_an_unknown_key_while_the_database_is_down_is_unavailable_not_invalid(db, clock):
    auth = authenticator(db, clock)
    db.error = DOWN
    with pytest.raises(AuthUnavailable):
        await auth.authenticate("tg-" + "A" * 43)
    with pytest.raises(InvalidKey):  # malformed needs no database
        await auth.authenticate("nonsense")


async def test_a_key_known_to_be_unknown_stays_a_401_for_its_ttl(db, clock):
    auth = authenticator(db, clock)
    made_up = "tg-" + "B" * 43
    with pytest.raises(InvalidKey):
        await auth.authenticate(made_up)
    db.error = DOWN
    with pytest.raises(InvalidKey):
        await auth.authenticate(made_up)
    clock.now += 6
    with pytest.raises(AuthUnavailable):
        await auth.authenticate(made_up)


async def test_revocation_during_an_outage_takes_effect_when_the_database_answers(database, db, clock,
                                                                                  tenant_key):
    _, key, secret = tenant_key
    auth = authenticator(db, clock)
    await auth.authenticate(secret)
    db.error = DOWN
    clock.now += 10
    await auth.authenticate(secret)  # served from the cache
    with database.session() as s:  # revoked where the gateway cannot see it (another replica)
        revoke_key(s, key=get_key(s, key_id=key.id))
    db.error = None
    clock.now += 1  # past retry_s: the next lookup goes to the database
    with pytest.raises(InvalidKey, match="revoked"):
        await auth.authenticate(secret)
    db.error = DOWN  # and a second outage does not bring it back from the cache
    clock.now += 2
    with pytest.raises(AuthUnavailable):
        await auth.authenticate(secret)


async def test_failed_lookups_back_off_instead_of_queueing_on_the_database(db, clock, tenant_key):
    _, _, secret = tenant_key
    auth = authenticator(db, clock)
    await auth.authenticate(secret)
    db.error = DOWN
    clock.now += 10
    before = db.sessions
    for _ in range(20):
        await auth.authenticate(secret)
    assert db.sessions == before + 1
    clock.now += 1
    await auth.authenticate(secret)
    assert db.sessions == before + 2


async def test_a_database_that_hangs_counts_as_unreachable(db, clock, tenant_key, monkeypatch):
    _, _, secret = tenant_key
    auth = authenticator(db, clock, lookup_timeout_s=0.1)
    await auth.authenticate(secret)
    real = db.session

    def slow():
        time.sleep(0.5)
        return real()

    monkeypatch.setattr(db, "session", slow)
    clock.now += 10
    started = time.perf_counter()
    assert (await auth.authenticate(secret)).key_id is not None  # from the cache, without waiting it out
    assert time.perf_counter() - started < 0.4


async def test_an_expired_key_is_refused_from_the_cache_too(database, db, clock):
    with database.session() as s:
        tenant = create_tenant(s, name="soon")
        _, secret = create_key(s, tenant_id=tenant.id, expires_at=utcnow() + timedelta(seconds=1))
    auth = authenticator(db, clock)
    await auth.authenticate(secret)
    auth._cache = {h: e.__class__(e.principal, e.fresh_until, utcnow() - timedelta(seconds=1))
                   for h, e in auth._cache.items()}
    db.error = DOWN
    clock.now += 10
    with pytest.raises(InvalidKey, match="expired"):
        await auth.authenticate(secret)


async def test_a_broken_query_is_not_mistaken_for_an_outage(db, clock, tenant_key):
    _, _, secret = tenant_key
    auth = authenticator(db, clock)
    await auth.authenticate(secret)
    db.error = ProgrammingError("SELECT api_keys", {}, Exception("no such column"))
    clock.now += 10
    with pytest.raises(ProgrammingError):
        await auth.authenticate(secret)


async def test_http_an_unknown_key_is_503_with_retry_after(data_app, data_services, db, tenant_key):
    data_services.authenticator = KeyAuthenticator(db)
    db.error = DOWN
    async with httpx.AsyncClient(transport=httpx.ASGITransport(data_app), base_url="http://gateway") as http:
        r = await http.get("/v1/usage", headers=bearer(tenant_key[2]))
    err = assert_openai_error(r, 503, code="database_unavailable")
    assert err["type"] == "server_error" and int(r.headers["retry-after"]) >= 1


def test_bad_configuration_is_refused(database):
    with pytest.raises(ValueError):
        KeyAuthenticator(database, grace_s=-1)
