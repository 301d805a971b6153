from __future__ import annotations

import argparse
from types import SimpleNamespace

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from gateway.api.admin.routes import router as admin_routes
from gateway.api.errors import install_error_handlers
from gateway.cli import routes as cli
from gateway.routing.router import Router
from gateway.security.admin_key import admin_actor
from gateway.settings import Settings

from .conftest import BF16, FP32

KEY = "tga-routes-test-key-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture
def client(catalogue):
    app = FastAPI()
    install_error_handlers(app)
    app.include_router(admin_routes)
    app.state.services = SimpleNamespace(admin_key=KEY)
    app.state.router = Router(catalogue)
    with TestClient(app) as c:
        yield c


def test_list_and_get(client):
    data = client.get("/admin/routes", headers=AUTH).json()["data"]
    assert {r["alias"] for r in data} >= {"chat", "other", "smollm2-135m-instruct"}
    chat = client.get("/admin/routes/chat", headers=AUTH).json()
    assert chat["weights"] == {FP32: 90, BF16: 10} and chat["canaries"] == [BF16]
    r = client.get("/admin/routes/nope", headers=AUTH)
    assert r.status_code == 404 and "error" in r.json()


def test_admin_key_required(client):
    assert client.get("/admin/routes").status_code == 401
    assert client.get("/admin/routes", headers={"Authorization": "Bearer wrong"}).status_code == 401


def test_put_promote_rollback_audit(client):
    # The audit names the credential; what the client says about itself is ignored.
    claims = {**AUTH, "x-tollgate-actor": "alice"}
    r = client.put("/admin/routes/chat", headers=claims, json={"weights": {"fp32": 50, "bf16": 50}})
    assert r.status_code == 200 and r.json()["weights"] == {FP32: 50, BF16: 50}
    r = client.post("/admin/routes/chat/promote", headers=AUTH, json={"version": BF16})
    assert r.json()["weights"] == {FP32: 0, BF16: 100}
    client.put("/admin/routes/chat", headers=AUTH, json={"weights": {FP32: 20, BF16: 80}})
    r = client.post("/admin/routes/chat/rollback", headers=AUTH)
    assert r.json()["weights"] == {FP32: 0, BF16: 100}
    audit = client.get("/admin/routes/audit?alias=chat", headers=AUTH).json()["data"]
    me = admin_actor(KEY)
    assert me.startswith("admin:") and KEY not in me
    assert [(e["action"], e["actor"]) for e in audit] == [("rollback", me), ("set", me), ("promote", me), ("set", me)]


def test_route_changes_need_the_admin_key_even_with_an_actor_header(client):
    r = client.post("/admin/routes/chat/rollback", headers={"x-tollgate-actor": "alice"})
    assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
    assert client.get("/admin/routes/audit", headers=AUTH).json()["data"] == []


@pytest.mark.parametrize("body,param", [
    ({"weights": {"fp32": 95, "bf16": 10}}, "weights"),
    ({"weights": {"fp32": 110, "bf16": -10}}, f"weights.{BF16}"),
    ({"weights": {"fp32": 90, "int8": 10}}, "weights.int8"),
    ({"weights": {"fp32": 100}, "fallbacks": ["nowhere"]}, "fallbacks.0"),
    ({"weights": "fp32"}, "weights"),
])
def test_bad_changes_are_400_naming_the_field(client, body, param):
    before = client.get("/admin/routes/chat", headers=AUTH).json()
    r = client.put("/admin/routes/chat", headers=AUTH, json=body)
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["param"] == param and err["type"] == "invalid_request_error"
    assert client.get("/admin/routes/chat", headers=AUTH).json() == before


def test_bad_promote(client):
    r = client.post("/admin/routes/chat/promote", headers=AUTH, json={"version": "int8"})
    assert r.status_code == 400 and r.json()["error"]["param"] == "version"


@pytest.mark.parametrize("limit", ["0", "1001", "lots"])
def test_bad_audit_limit_is_400_naming_limit(client, limit):
    r = client.get("/admin/routes/audit", headers=AUTH, params={"limit": limit})
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["param"] == "limit" and err["message"].startswith("limit: ")  # not "query.limit"


def run_cli(client, capsys, *argv) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["routes", "--admin-key", KEY, *argv])
    rc = args.handler(args, Settings(), client=client)
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_cli(client, capsys):
    rc, out, _ = run_cli(client, capsys, "set", "chat", "fp32=70", "bf16=30")
    assert rc == 0 and f"{FP32}=70" in out and f"{BF16}=30" in out
    rc, out, _ = run_cli(client, capsys, "promote", "chat", "bf16")
    assert rc == 0 and f"{BF16}=100" in out
    rc, out, _ = run_cli(client, capsys, "rollback", "chat")
    assert rc == 0
    rc, out, _ = run_cli(client, capsys, "list")
    assert rc == 0 and "chat" in out
    rc, _, err = run_cli(client, capsys, "set", "chat", "fp32=70", "bf16=20")
    assert rc == 1 and "sum to 100" in err
    rc, _, err = run_cli(client, capsys, "set", "chat", "fp32=seventy")
    assert rc == 2 and "integer" in err
    rc, out, _ = run_cli(client, capsys, "audit", "--alias", "chat")
    assert rc == 0 and '"action": "promote"' in out and f'"actor": "{admin_actor(KEY)}"' in out


def test_cli_reads_the_generated_admin_key_or_says_where_it_lives(client, capsys, tmp_path):
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["routes", "list"])
    with pytest.raises(SystemExit, match="admin_key"):
        args.handler(args, Settings(data_dir=tmp_path, admin_key=""), client=client)
    (tmp_path / "admin_key").write_text(KEY + "\n")
    assert args.handler(args, Settings(data_dir=tmp_path, admin_key=""), client=client) == 0
