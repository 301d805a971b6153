import asyncio
from datetime import timedelta

import pytest

from gateway.crud.keys import create_key, get_key, revoke_key
from gateway.crud.tenants import create_tenant, update_tenant
from gateway.db.types import utcnow
from gateway.domain.api_keys import hash_key
from gateway.security.authenticator import InvalidKey, KeyAuthenticator
from gateway.security.principal import key_allows_model


@pytest.fixture
def tenant_key(database):
    with database.session() as s:
        tenant = create_tenant(s, name="acme", rpm=60, tpm=1000, monthly_token_budget=10**6,
                               cache_threshold=0.9, cache_allow_sampling=True)
        key, secret = create_key(s, tenant_id=tenant.id, models=["chat"], rpm=5, tpm=50)
    return tenant, key, secret


async def test_key_resolves_to_principal_with_all_limits(database, tenant_key):
    tenant, key, secret = tenant_key
    p = await KeyAuthenticator(database).authenticate(secret)
    assert (p.tenant_id, p.tenant_name, p.key_id) == (tenant.id, "acme", key.id)
    assert (p.rpm, p.tpm, p.monthly_token_budget, p.key_rpm, p.key_tpm) == (60, 1000, 10**6, 5, 50)
    assert (p.cache_enabled, p.cache_allow_sampling, p.cache_threshold) == (True, True, 0.9)
    assert p.key_models == ("chat",)
    assert key_allows_model(p, "chat") and not key_allows_model(p, "other")
    with database.session() as s:
        assert get_key(s, key_id=key.id).last_used_at is not None


async def test_second_lookup_is_served_from_memory(database, tenant_key):
    _, _, secret = tenant_key
    auth = KeyAuthenticator(database, ttl_s=60)
    first = await auth.authenticate(secret)
    auth._database = None  # any database access now would fail
    assert await auth.authenticate(secret) is first


@pytest.mark.parametrize("bad", ["", "nonsense", "tg-" + "A" * 43])
async def test_malformed_or_unknown_keys_are_refused(database, bad):
    with pytest.raises(InvalidKey, match="Incorrect API key"):
        await KeyAuthenticator(database).authenticate(bad)


async def test_revocation_takes_effect_at_once_in_process(database, tenant_key):
    _, key, secret = tenant_key
    auth = KeyAuthenticator(database, ttl_s=60)
    await auth.authenticate(secret)
    with database.session() as s:
        revoke_key(s, key=get_key(s, key_id=key.id))
    auth.invalidate_key(key.id)
    with pytest.raises(InvalidKey, match="revoked"):
        await auth.authenticate(secret)


async def test_disabled_tenant_is_refused_after_invalidation(database, tenant_key):
    tenant, _, secret = tenant_key
    auth = KeyAuthenticator(database, ttl_s=60)
    await auth.authenticate(secret)
    with database.session() as s:
        update_tenant(s, tenant=s.merge(tenant), changes={"status": "disabled"})
    auth.invalidate_tenant(tenant.id)
    with pytest.raises(InvalidKey, match="disabled"):
        await auth.authenticate(secret)


async def test_expired_key_is_refused_even_when_cached(database, tenant_key):
    tenant, _, _ = tenant_key
    with database.session() as s:
        _, secret = create_key(s, tenant_id=tenant.id, expires_at=utcnow() + timedelta(milliseconds=300))
    auth = KeyAuthenticator(database, ttl_s=60)
    await auth.authenticate(secret)
    await asyncio.sleep(0.35)
    with pytest.raises(InvalidKey, match="expired"):
        await auth.authenticate(secret)
    with pytest.raises(InvalidKey, match="expired"):
        KeyAuthenticator(database).load(secret, hash_key(secret))


def test_cache_is_bounded(database):
    auth = KeyAuthenticator(database, max_entries=2)
    with database.session() as s:
        tenant = create_tenant(s, name="many")
        secrets = [create_key(s, tenant_id=tenant.id)[1] for _ in range(3)]
    for secret in secrets:
        auth.load(secret, hash_key(secret))
    assert len(auth._cache) == 2 and hash_key(secrets[0]) not in auth._cache


async def test_unknown_keys_are_remembered_briefly(database, monkeypatch):
    auth = KeyAuthenticator(database, ttl_s=60)
    made_up = "tg-" + "B" * 43
    with pytest.raises(InvalidKey):
        await auth.authenticate(made_up)
    monkeypatch.setattr(auth, "load", lambda *a: pytest.fail("queried the database again"))
    with pytest.raises(InvalidKey, match="Incorrect API key"):
        await auth.authenticate(made_up)
