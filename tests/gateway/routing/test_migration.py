from __future__ import annotations

from sqlalchemy import inspect

from gateway.db.database import Database
from gateway.db.migrate import upgrade
from gateway.routing.router import Router
from gateway.routing.sql_store import SqlRouteStore


def test_upgrade_heads_creates_route_tables(tmp_path, catalogue):
    url = f"sqlite:///{tmp_path / 'm.db'}"
    upgrade(url)
    db = Database(url)
    try:
        tables = set(inspect(db.engine).get_table_names())
        assert {"route_overrides", "route_audit"} <= tables
        router = Router(catalogue, store=SqlRouteStore(db))
        router.set_weights("chat", {"fp32": 100, "bf16": 0}, actor="ops")
        assert Router(catalogue, store=SqlRouteStore(db)).route("chat")["source"] == "override"
    finally:
        db.dispose()


def test_upgrade_heads_creates_route_rules_and_the_tenant_plan(tmp_path, catalogue):
    url = f"sqlite:///{tmp_path / 'm.db'}"
    upgrade(url)
    db = Database(url)
    try:
        assert "route_rules" in inspect(db.engine).get_table_names()
        assert "plan" in {c["name"] for c in inspect(db.engine).get_columns("tenants")}
        Router(catalogue, store=SqlRouteStore(db)).set_rules("chat", [{"name": "all", "target": "bf16"}], actor="ops")
        assert Router(catalogue, store=SqlRouteStore(db)).rules("chat")[0]["name"] == "all"
    finally:
        db.dispose()
