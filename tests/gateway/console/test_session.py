"""Console sessions and CSRF tokens: signed, expiring, tamper-evident, revocable; config checks."""
from __future__ import annotations

import pytest

from gateway.console.config import ConsoleConfig
from gateway.console.csrf import CsrfTokens
from gateway.console.session import ConsoleSession, Revocations, SessionCodec, derive_key

KEY = "tga-test-admin-key-0123456789abcdef"


def codec(admin_key: str = KEY) -> SessionCodec:
    return SessionCodec(derive_key(admin_key, "session"))


def test_round_trip_and_expiry():
    s = ConsoleSession("tenant", 1000.0, tenant_id="t1", key_id="k1")
    value = codec().encode(s)
    assert "=" not in value  # no quoting in the cookie header
    assert codec().decode(value, now=999.0) == s
    assert codec().decode(value, now=1000.0) is None


@pytest.mark.parametrize("mangle", [
    lambda v: v[:-1] + ("A" if v[-1] != "A" else "B"),  # the signature
    lambda v: v[:5] + ("X" if v[5] != "X" else "Y") + v[6:],  # the payload
    lambda v: v.replace(".", ""),
    lambda v: "",
    lambda v: "a.b.c",
])
def test_forged_or_malformed_values_are_no_session(mangle):
    value = codec().encode(ConsoleSession("admin", 2e9))
    assert codec().decode(mangle(value), now=0) is None


def test_a_new_admin_key_signs_everyone_out():
    value = codec().encode(ConsoleSession("admin", 2e9))
    assert codec("tga-another-admin-key-0123456789abcdef").decode(value, now=0) is None


def test_session_and_csrf_keys_differ_and_tokens_bind_to_the_session():
    assert derive_key(KEY, "session") != derive_key(KEY, "csrf")
    tokens = CsrfTokens(derive_key(KEY, "csrf"))
    assert tokens.valid("sid-1", tokens.token("sid-1"))
    assert not tokens.valid("sid-2", tokens.token("sid-1"))
    assert not tokens.valid("sid-1", None) and not tokens.valid(None, tokens.token("sid-1"))


def test_revocations_forget_what_expired():
    r = Revocations()
    gone = ConsoleSession("admin", 1.0)  # long expired: dropped at the next revoke
    live = ConsoleSession("admin", 2e9)
    r.revoke(gone)
    r.revoke(live)
    assert r.revoked(live) and not r.revoked(gone)


def test_bad_sessions_and_configs_raise():
    with pytest.raises(ValueError):
        ConsoleSession("root", 1.0)
    with pytest.raises(ValueError):
        ConsoleSession("tenant", 1.0, tenant_id="t1")  # no key id
    with pytest.raises(ValueError):
        ConsoleConfig(session_ttl_s=10)
    with pytest.raises(ValueError):
        ConsoleConfig(page_size=0)
