from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from gateway.audit.chain import GENESIS, canonical, canonical_time, jsonable, recomputed_hash, seal

AT = datetime(2026, 12, 1, 19, 52, 0, 123, tzinfo=UTC)
FIELDS = dict(seq=1, at=AT, actor="admin:ab12", action="tenant.create", target_type="tenant", target_id="t1",
              request_id="req-1", before=None, after={"rpm": 60, "name": "acme"}, prev_hash=GENESIS)


def test_canonical_form_is_sorted_compact_ascii_and_exact_in_time():
    raw = canonical(**FIELDS)
    assert raw.startswith(b'{"action":"tenant.create","actor":"admin:ab12","after":{"name":"acme","rpm":60}')
    assert b'"at":"2026-12-01T19:52:00.000123Z"' in raw and b" " not in raw
    assert canonical(**{**FIELDS, "after": {"rpm": 60, "name": "acme"}}) == canonical(
        **{**FIELDS, "after": {"name": "acme", "rpm": 60}})


def test_times_are_utc_whatever_their_zone():
    plus2 = AT.astimezone(timezone(timedelta(hours=2)))
    assert canonical_time(plus2) == canonical_time(AT) == canonical_time(AT.replace(tzinfo=None))


def test_jsonable_keeps_decimals_exact_and_refuses_what_json_cannot_say():
    assert jsonable({"p": Decimal("0.4000000001"), "at": AT, "v": (1, 2)}) == {
        "p": "0.4000000001", "at": "2026-12-01T19:52:00.000123Z", "v": [1, 2]}
    with pytest.raises(ValueError):
        jsonable(float("nan"))
    with pytest.raises(TypeError):
        jsonable(object())


@pytest.mark.parametrize("field,value", [
    ("seq", 2), ("at", AT + timedelta(microseconds=1)), ("actor", "admin:other"), ("action", "tenant.update"),
    ("target_type", "key"), ("target_id", "t2"), ("request_id", None), ("before", {}),
    ("after", {"rpm": 61, "name": "acme"}), ("prev_hash", "f" * 64)])
def test_every_field_is_sealed(field, value):
    sealed = seal(**FIELDS)
    assert seal(**{**FIELDS, field: value}).hash != sealed.hash
    assert recomputed_hash(sealed) == sealed.hash and len(sealed.hash) == 64
