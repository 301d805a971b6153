"""Console sessions: a signed, expiring cookie value. Nothing secret is in it, only who signed in.

The value is `<base64 JSON>.<HMAC-SHA256>` under a key derived from the admin key, so every gateway replica
accepts the others' sessions, and changing the admin key signs everyone out. Signing out adds the session id
to this process' `Revocations` and tells every other replica (a SessionRevoked event), and deletes the cookie
in the browser."""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import asdict, dataclass, field

from gateway.security.session_revocations import SessionRevocations


@dataclass(frozen=True, slots=True)
class ConsoleSession:
    role: str  # "admin" | "tenant"
    expires_at: float  # Unix seconds
    tenant_id: str | None = None  # a tenant's session: whose pages it may read
    key_id: str | None = None  # the tenant key it signed in with (revoking the key ends the session)
    sid: str = field(default_factory=lambda: secrets.token_urlsafe(16))

    def __post_init__(self) -> None:
        if self.role not in ("admin", "tenant"):
            raise ValueError(f"role must be admin or tenant, got {self.role!r}")
        if self.role == "tenant" and not (self.tenant_id and self.key_id):
            raise ValueError("a tenant's session needs its tenant id and key id")

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"


def derive_key(admin_key: str, purpose: str) -> bytes:
    """A key of its own per purpose (sessions, CSRF), so one never verifies the other's values."""
    return hmac.new(admin_key.encode(), f"tollgate-console:{purpose}".encode(), hashlib.sha256).digest()


class SessionCodec:
    def __init__(self, key: bytes) -> None:
        self._key = key

    def _mac(self, payload: bytes) -> str:
        return base64.urlsafe_b64encode(hmac.new(self._key, payload, hashlib.sha256).digest()).decode().rstrip("=")

    def encode(self, session: ConsoleSession) -> str:
        # No "=" padding: a cookie value with one gets quoted.
        payload = base64.urlsafe_b64encode(json.dumps(asdict(session), sort_keys=True).encode()).decode().rstrip("=")
        return f"{payload}.{self._mac(payload.encode())}"

    def decode(self, value: str | None, *, now: float | None = None) -> ConsoleSession | None:
        """The session, or None for a missing, forged, malformed or expired value."""
        if not value or value.count(".") != 1:
            return None
        payload, mac = value.split(".")
        if not hmac.compare_digest(mac, self._mac(payload.encode())):
            return None
        try:
            session = ConsoleSession(**json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))
        except (ValueError, TypeError):
            return None
        return session if session.expires_at > (time.time() if now is None else now) else None


class Revocations:
    """Sessions signed out, kept until they would have expired anyway: in the process's SessionRevocations,
    which the event handlers fill with other replicas' sign-outs."""

    def __init__(self, store: SessionRevocations | None = None) -> None:
        self.store = store if store is not None else SessionRevocations()

    def revoke(self, session: ConsoleSession) -> None:
        self.store.revoke(session.sid, session.expires_at)

    def revoked(self, session: ConsoleSession) -> bool:
        return self.store.revoked(session.sid)
