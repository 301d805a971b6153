from __future__ import annotations

import pytest

from gateway.db.base import Base
from gateway.db.database import Database
from gateway.routing.router import Router
from gateway.routing.sql_store import SqlRouteStore
from gateway.routing.tables import RouteAudit, RouteOverride

from .conftest import BF16, FP32


@pytest.fixture
def db(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'routes.db'}")
    Base.metadata.create_all(db.engine, tables=[RouteOverride.__table__, RouteAudit.__table__])
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
