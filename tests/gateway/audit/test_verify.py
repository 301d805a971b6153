import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from gateway.audit.verify import verify

from .conftest import append_n


def _verdict(db):
    with db.session() as s:
        return verify(s)


def test_an_untouched_log_passes(database):
    assert _verdict(database).ok and _verdict(database).rows == 0
    append_n(database, 4)
    v = _verdict(database)
    assert v.ok and v.rows == 4 and v.head_seq == 4 and "4 rows" in v.summary()


def test_the_triggers_refuse_update_and_delete(database):
    append_n(database, 1)
    for sql in ("UPDATE audit_log SET actor = 'x'", "DELETE FROM audit_log"):
        with pytest.raises(DBAPIError, match="append-only"), database.engine.begin() as conn:
            conn.execute(text(sql))
    assert _verdict(database).ok


def test_an_edited_row_is_named(database, tamper):
    append_n(database, 4)
    tamper(database, "UPDATE audit_log SET after = '{\"rpm\": 1000}' WHERE seq = 2")
    v = _verdict(database)
    assert not v.ok and v.bad_seq == 2 and "edited" in v.reason and v.rows == 1


def test_an_edited_and_rehashed_row_breaks_the_next_link(database, tamper):
    append_n(database, 3)
    tamper(database, "UPDATE audit_log SET hash = (SELECT hash FROM audit_log WHERE seq = 1) WHERE seq = 2")
    v = _verdict(database)
    assert not v.ok and v.bad_seq == 2  # its own hash no longer matches
    tamper(database, "UPDATE audit_log SET hash = (SELECT hash FROM audit_log WHERE seq = 3), "
                     "prev_hash = (SELECT prev_hash FROM audit_log WHERE seq = 3) WHERE seq = 2")
    assert _verdict(database).bad_seq == 2


def test_a_deleted_row_is_named(database, tamper):
    append_n(database, 4)
    tamper(database, "DELETE FROM audit_log WHERE seq = 2")
    v = _verdict(database)
    assert not v.ok and v.bad_seq == 2 and "missing" in v.reason


def test_a_deleted_first_row_is_named(database, tamper):
    append_n(database, 2)
    tamper(database, "DELETE FROM audit_log WHERE seq = 1")
    assert _verdict(database).bad_seq == 1


def test_a_cut_off_tail_is_noticed_from_the_head(database, tamper):
    append_n(database, 4)
    tamper(database, "DELETE FROM audit_log WHERE seq >= 3")
    v = _verdict(database)
    assert not v.ok and v.bad_seq == 3 and "removed from the end" in v.reason
    tamper(database, "DELETE FROM audit_log")
    assert _verdict(database).bad_seq == 1


def test_a_missing_head_is_reported(database, tamper):
    append_n(database, 1)
    tamper(database, "DELETE FROM audit_chain_head")
    v = _verdict(database)
    assert not v.ok and v.bad_seq is None and "chain head" in v.summary()
