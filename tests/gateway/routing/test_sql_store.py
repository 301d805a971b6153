from __future__ import annotations

import pytest

from gateway.audit.query import AuditQuery, list_records
from gateway.audit.table import AuditChainHead, AuditLogRow
from gateway.audit.verify import verify
from gateway.db.base import Base
from gateway.db.database import Database
from gateway.db.models.route_rules import RouteRules
from gateway.routing.router import Router
from gateway.routing.sql_store import SqlRouteStore
from gateway.routing.tables import RouteAudit, RouteOverride

from .conftest import BF16, FP32


@pytest.fixture
def db(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'routes.db'}")
    Base.metadata.create_all(db.engine, tables=[RouteOverride.__table__, RouteAudit.__table__, RouteRules.__table__,
                                                AuditLogRow.__table__, AuditChainHead.__table__])
    yield db
    db.dispose()


def test_routes_and_audit_survive_a_restart(db, catalogue):
    router = Router(catalogue, store=SqlRouteStore(db))
    router.set_weights("chat", {"fp32": 70, "bf16": 30}, ["other"], actor="alice")
    router.rollback("chat", actor="bob")
    again = Router(catalogue, store=SqlRouteStore(db))
    view = again.route("chat")
    assert view["weights"] == {FP32: 100, BF16: 0} and view["fallbacks"] == ["other"]
    audit = again.audit()
    assert [(e.actor, e.action) for e in audit] == [("bob", "rollback"), ("alice", "set")]
    assert audit[1].before["weights"] == {FP32: 90, BF16: 10}
    assert audit[0].at.tzinfo is not None


def test_route_changes_also_go_to_the_general_audit_log(db, catalogue):
    router = Router(catalogue, store=SqlRouteStore(db))
    router.set_weights("chat", {"fp32": 70, "bf16": 30}, actor="alice", request_id="req-1")
    router.promote("chat", "bf16", actor="bob")
    with db.session() as s:
        rows = list_records(s, AuditQuery()).data
        assert verify(s).ok
    assert [(r.action, r.actor, r.target_type, r.target_id) for r in rows] == [
        ("route.promote", "bob", "route", "chat"), ("route.update", "alice", "route", "chat")]
    assert rows[1].request_id == "req-1" and rows[1].before["weights"] == {FP32: 90, BF16: 10}
    assert rows[1].after["weights"] == {FP32: 70, BF16: 30}
