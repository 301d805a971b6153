"""expires_after as the two multipart fields carry it: accepted within OpenAI's bounds, refused naming the field."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gateway.batch.expiry import MAX_S, MIN_S, InvalidExpiry, expires_at

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def test_none_sent_means_the_file_never_expires():
    assert expires_at(None, None, created_at=T0) is None


@pytest.mark.parametrize("seconds", [MIN_S, 86400, MAX_S, " 7200 "])
def test_seconds_after_creation(seconds):
    assert expires_at("created_at", str(seconds), created_at=T0) == T0 + timedelta(seconds=int(seconds))


@pytest.mark.parametrize("anchor, seconds, param", [
    ("created_at", str(MIN_S - 1), "expires_after[seconds]"),
    ("created_at", str(MAX_S + 1), "expires_after[seconds]"),
    ("created_at", "1.5e4", "expires_after[seconds]"),
    ("created_at", "", "expires_after[seconds]"),
    ("created_at", None, "expires_after[seconds]"),
    ("last_accessed_at", "7200", "expires_after[anchor]"),
    (None, "7200", "expires_after[anchor]"),
])
def test_bad_values_name_their_field(anchor, seconds, param):
    with pytest.raises(InvalidExpiry) as e:
        expires_at(anchor, seconds, created_at=T0)
    assert e.value.param == param and param in str(e.value)
