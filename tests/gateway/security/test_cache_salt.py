import pytest

from gateway.security.cache_salt import CacheSalter


def test_salts_are_stable_per_tenant_distinct_across_tenants_and_opaque():
    s = CacheSalter("secret")
    assert s.salt("tenant-a") == CacheSalter("secret").salt("tenant-a")  # any replica, same salt
    assert s.salt("tenant-a") != s.salt("tenant-b")
    assert "tenant-a" not in s.salt("tenant-a") and len(s.salt("tenant-a")) == 32
    assert CacheSalter("other").salt("tenant-a") != s.salt("tenant-a")


def test_isolation_off_gives_no_salt_and_on_needs_a_secret():
    assert CacheSalter("", enabled=False).salt("t") is None
    with pytest.raises(ValueError, match="secret"):
        CacheSalter("")
