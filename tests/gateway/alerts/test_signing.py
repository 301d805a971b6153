"""Signatures, backoff and the config's bounds: the pure pieces."""
import random

import pytest

from gateway.alerts.config import AlertsConfig
from gateway.alerts.signing import signature, verify

SECRET = "whsec-0123456789abcdef"
BODY = b'{"id":"evt_1","type":"ping"}'


def test_signature_is_hmac_sha256_of_timestamp_dot_body():
    import hashlib
    import hmac
    header = signature(SECRET, BODY, 1_700_000_000)
    expected = hmac.new(SECRET.encode(), b"1700000000." + BODY, hashlib.sha256).hexdigest()
    assert header == f"t=1700000000,v1={expected}"


def test_verify_accepts_its_own_signature_and_refuses_tampering():
    now = 1_700_000_000
    header = signature(SECRET, BODY, now)
    assert verify(SECRET, BODY, header, now=now + 10)
    assert not verify(SECRET, BODY + b" ", header, now=now)  # body changed
    assert not verify("another-secret-0123456", BODY, header, now=now)  # wrong secret
    assert not verify(SECRET, BODY, header.replace("t=1700000000", "t=1700000001"), now=now)  # time changed
    assert not verify(SECRET, BODY, header, now=now + 301)  # too old: a replay
    for bad in ("", "v1=abc", "t=x,v1=abc", "garbage"):
        assert not verify(SECRET, BODY, bad, now=now)


def test_verify_accepts_any_of_several_v1_values():
    now = 1_700_000_000
    good = signature(SECRET, BODY, now)
    assert verify(SECRET, BODY, f"t={now},v1=00ff,{good.split(',')[1]}", now=now)


def test_backoff_doubles_with_jitter_and_is_capped():
    config = AlertsConfig(backoff_s=1.0, backoff_max_s=10.0, jitter=0.2)
    rand = random.Random(1)
    delays = [config.backoff.delay_s(n - 1, rand) for n in range(1, 7)]
    for n, d in enumerate(delays, start=1):
        base = min(2 ** (n - 1), 10.0)
        assert base * 0.8 <= d <= base * 1.2
    exact = AlertsConfig(backoff_s=1.0, backoff_max_s=10.0, jitter=0)
    assert [exact.backoff.delay_s(n) for n in (0, 1, 2, 3, 4)] == [1, 2, 4, 8, 10]


@pytest.mark.parametrize("kw", [{"poll_s": 0}, {"timeout_s": 10, "lease_s": 5}, {"max_attempts": 0},
                                {"jitter": 1.0}, {"backoff_s": 5, "backoff_max_s": 1}, {"batch": 0}])
def test_bad_config_is_refused(kw):
    with pytest.raises(ValueError):
        AlertsConfig(**kw)
