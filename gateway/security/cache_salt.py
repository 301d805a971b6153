"""Per-tenant keys for the workers, opaque to them and stable across gateway replicas: the prefix-cache salt
and the fair-share key the engines' schedulers count service by."""
from __future__ import annotations

import hashlib
import hmac


class CacheSalter:
    """salt(tenant) = HMAC-SHA256(secret, tenant id), truncated. Workers see only the salt: the
    same tenant always gets the same one (its prefixes stay reusable on any replica, from any
    gateway sharing the secret), and no salt reveals which tenant it belongs to."""

    def __init__(self, secret: str, *, enabled: bool = True) -> None:
        if enabled and not secret:
            raise ValueError("a cache salt secret is required when prefix-cache isolation is on")
        self._key = hashlib.sha256(b"tollgate-prefix-cache-salt\x00" + secret.encode()).digest()
        self._fair_key = hashlib.sha256(b"tollgate-fair-share\x00" + secret.encode()).digest()
        self.enabled = enabled

    def salt(self, tenant_id: str) -> str | None:
        """None when isolation is off (a single-tenant install shares every prefix)."""
        if not self.enabled:
            return None
        return hmac.new(self._key, tenant_id.encode(), hashlib.sha256).hexdigest()[:32]

    def tenant_key(self, tenant_id: str) -> str:
        """The tenant's fair-share key in the engines' queues (always set: fairness holds with isolation off),
        under its own key so it never equals the tenant's salt."""
        return hmac.new(self._fair_key, tenant_id.encode(), hashlib.sha256).hexdigest()[:32]
