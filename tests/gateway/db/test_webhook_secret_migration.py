"""0017_webhook_secret_sealed: a plaintext row from before keeps its secret and is marked unsealed (the gateway
seals it at start-up); coming back down is refused while a sealed secret would be lost."""
from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text

from gateway.db.database import normalise_url
from gateway.db.migrate import downgrade, upgrade

BELOW = "0017_webhook_secret_sealed@-1"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def empty_url(request):
    return request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url")


def _run(url: str, sql: str, **params):
    engine = create_engine(normalise_url(url))
    try:
        with engine.begin() as conn:
            result = conn.execute(text(sql), params)
            return result.mappings().all() if result.returns_rows else None
    finally:
        engine.dispose()


def test_a_plaintext_row_survives_the_upgrade_unsealed_and_sealed_rows_block_the_downgrade(empty_url):
    upgrade(empty_url)
    downgrade(empty_url, BELOW)
    _run(empty_url, "INSERT INTO webhooks (id, url, events, secret, thresholds, created_at) VALUES "
                    "('wh_old', 'https://h.example.com/x', '[\"*\"]', 'whsec-plain-0123456789', '{}', "
                    "CURRENT_TIMESTAMP)")
    upgrade(empty_url)
    (row,) = _run(empty_url, "SELECT secret, secret_sealed, secret_hint FROM webhooks")
    assert (row["secret"], bool(row["secret_sealed"]), row["secret_hint"]) == ("whsec-plain-0123456789", False, "")
    downgrade(empty_url, BELOW)  # nothing sealed yet: nothing to lose
    upgrade(empty_url)
    _run(empty_url, "UPDATE webhooks SET secret = :s, secret_sealed = :t", s="gAAAA" + "x" * 300, t=True)
    with pytest.raises(RuntimeError, match="sealed"):
        downgrade(empty_url, BELOW)
    (row,) = _run(empty_url, "SELECT secret FROM webhooks")
    assert len(row["secret"]) == 305  # longer than the old String(200): the column is Text
