"""`tollgate audit verify|list` against the database DATABASE_URL names (the acceptance test of the log)."""
import json

import pytest

from gateway.audit.auditor import Auditor
from gateway.cli import main
from gateway.crud.keys import create_key
from gateway.crud.tenants import create_tenant, update_tenant
from gateway.db.database import Database
from gateway.db.migrate import upgrade

from .conftest import untriggered


@pytest.fixture
def migrated(db_url, monkeypatch, tmp_path):
    """A migrated database with three audited admin changes, as `tollgate` sees it."""
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv("TOLLGATE_DATA_DIR", str(tmp_path / "data"))
    upgrade(db_url)
    db = Database(db_url)
    auditor = Auditor("admin:cli-test")
    with db.session() as s:
        tenant = create_tenant(s, name="acme", rpm=10, audit=auditor.on_write("tenant.create"))
        update_tenant(s, tenant=tenant, changes={"rpm": 20}, audit=auditor.on_write("tenant.update", before=tenant))
        create_key(s, tenant_id=tenant.id, audit=auditor.on_write("key.create"))
    yield db
    db.dispose()


def _run(capsys, *argv) -> tuple[int, str, str]:
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_verify_passes_untouched_and_names_the_row_edited_in_sql(migrated, capsys):
    rc, out, _ = _run(capsys, "audit", "verify")
    assert rc == 0 and "intact: 3 rows" in out

    untriggered(migrated, "UPDATE audit_log SET after = '{\"rpm\": 1000000}' WHERE seq = 2")
    rc, out, err = _run(capsys, "audit", "verify")
    assert rc == 1 and "seq 2" in err and "edited" in err


def test_verify_names_a_deleted_row(migrated, capsys):
    untriggered(migrated, "DELETE FROM audit_log WHERE seq = 2")
    rc, _, err = _run(capsys, "audit", "verify")
    assert rc == 1 and "seq 2" in err and "missing" in err


def test_list_prints_json_lines_newest_first(migrated, capsys):
    rc, out, _ = _run(capsys, "audit", "list", "--action", "tenant.*")
    rows = [json.loads(line) for line in out.splitlines()]
    assert rc == 0 and [r["action"] for r in rows] == ["tenant.update", "tenant.create"]
    assert rows[0]["before"]["rpm"] == 10 and rows[0]["after"]["rpm"] == 20
    assert _run(capsys, "audit", "list", "--limit", "0")[0] == 2


def test_an_unmigrated_database_is_an_error_not_a_traceback(sqlite_url, monkeypatch, capsys):
    monkeypatch.setenv("DATABASE_URL", sqlite_url)
    rc, _, err = _run(capsys, "audit", "verify")
    assert rc == 2 and "cannot read the audit log" in err
