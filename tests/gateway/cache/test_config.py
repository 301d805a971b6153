import pytest

from gateway.cache import DEFAULT_THRESHOLD, CacheConfig, TenantCachePolicy


@pytest.mark.parametrize("field,value", [
    ("threshold", 0.0), ("threshold", -0.2), ("threshold", 1.01),
    ("ttl_s", -1), ("max_entries", -5),
])
def test_bad_policy_values_are_refused_naming_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        TenantCachePolicy(**{field: value})


def test_edges_are_allowed():
    TenantCachePolicy(threshold=1.0, ttl_s=0, max_entries=0)


def test_policy_for_fills_unset_tenant_columns_with_defaults():
    config = CacheConfig(default_policy=TenantCachePolicy(threshold=0.9, ttl_s=10, max_entries=7))
    policy = config.policy_for(enabled=True, allow_sampling=None, threshold=None, ttl_s=30, max_entries=None)
    assert policy == TenantCachePolicy(enabled=True, allow_sampling=False, threshold=0.9, ttl_s=30, max_entries=7)
    with pytest.raises(ValueError, match="threshold"):
        config.policy_for(threshold=2.0)


def test_default_threshold_is_the_evaluated_one():
    assert TenantCachePolicy().threshold == DEFAULT_THRESHOLD == 0.60
    assert CacheConfig().unjudged_cosine == 0.95
    with pytest.raises(ValueError, match="unjudged_cosine"):
        CacheConfig(unjudged_cosine=0.0)


def test_the_default_policy_keeps_a_finite_cap():
    assert 0 < CacheConfig().default_policy.max_entries < float("inf")
    with pytest.raises(ValueError, match=r"default_policy.max_entries"):
        CacheConfig(default_policy=TenantCachePolicy(max_entries=0))
    assert CacheConfig().policy_for(max_entries=0).max_entries == 0  # a tenant may still opt out


def test_settings_give_the_default_cap():
    from pydantic import ValidationError

    from gateway.settings import Settings

    assert Settings().cache_max_entries_per_tenant == 10_000
    with pytest.raises(ValidationError, match="cache_max_entries_per_tenant"):
        Settings(cache_max_entries_per_tenant=0)
