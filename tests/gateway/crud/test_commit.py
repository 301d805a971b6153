"""A CRUD write and its audit row commit together, or neither does."""
import pytest
from sqlalchemy import delete, func, select

from gateway.audit.auditor import Auditor
from gateway.audit.errors import ChainHeadMissing
from gateway.audit.table import AuditChainHead, AuditLogRow
from gateway.crud.tenants import create_tenant, get_tenant_by_name, update_tenant
from gateway.db.models.tenant import Tenant

AUDITOR = Auditor("admin:test")


def _count(db, table) -> int:
    with db.session() as s:
        return s.scalar(select(func.count()).select_from(table))


def test_a_failing_audit_append_leaves_the_change_unapplied(database):
    with database.session() as s:
        tenant = create_tenant(s, name="acme", rpm=1, audit=AUDITOR.on_write("tenant.create"))
    with database.session() as s, s.begin():
        s.execute(delete(AuditChainHead))
    with database.session() as s, pytest.raises(ChainHeadMissing):
        create_tenant(s, name="other", audit=AUDITOR.on_write("tenant.create"))
    with database.session() as s:
        t = s.get(Tenant, tenant.id)
        with pytest.raises(ChainHeadMissing):
            update_tenant(s, tenant=t, changes={"rpm": 2}, audit=AUDITOR.on_write("tenant.update", before=t))
    with database.session() as s:
        assert get_tenant_by_name(s, name="other") is None and s.get(Tenant, tenant.id).rpm == 1
    assert _count(database, AuditLogRow) == 1


def test_without_a_hook_nothing_is_audited(database):
    with database.session() as s:
        create_tenant(s, name="acme")
    assert _count(database, AuditLogRow) == 0
