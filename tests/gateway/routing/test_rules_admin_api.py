"""GET/PUT /admin/routes/{alias}/rules: validated (400 naming the field), persisted and audited by the Router."""
from __future__ import annotations

import argparse
import json
from types import SimpleNamespace

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from gateway.api.admin.routes import router as admin_routes
from gateway.api.errors import install_error_handlers
from gateway.cli import routes as cli
from gateway.routing.router import Router
from gateway.settings import Settings

from .conftest import BF16, FP32

KEY = "tga-rules-test-key-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {KEY}"}
RULES = [{"name": "free-small", "when": {"plan": ["free"], "max_tokens": {"max": 128}}, "target": "bf16"},
         {"name": "code", "when": {"task": ["code"]}, "target": {"fp32": 80, "other@v1": 20}}]


@pytest.fixture
def client(catalogue):
    app = FastAPI()
    install_error_handlers(app)
    app.include_router(admin_routes)
    app.state.services = SimpleNamespace(admin_key=KEY)
    app.state.router = Router(catalogue, task_labels=["chat", "code"])
    with TestClient(app) as c:
        yield c


def test_put_then_get(client):
    assert client.get("/admin/routes/chat/rules", headers=AUTH).json() == {
        "object": "route.rules", "alias": "chat", "rules": [], "task_classes": ["chat", "code"]}
    r = client.put("/admin/routes/chat/rules", headers=AUTH, json={"rules": RULES})
    assert r.status_code == 200, r.text
    saved = r.json()["rules"]
    assert [x["name"] for x in saved] == ["free-small", "code"]
    assert saved[0]["target"] == {BF16: 100} and saved[1]["target"] == {FP32: 80, "other@v1": 20}
    assert client.get("/admin/routes/chat/rules", headers=AUTH).json()["rules"] == saved
    audit = client.get("/admin/routes/audit?alias=chat", headers=AUTH).json()["data"]
    assert audit[0]["action"] == "rules" and audit[0]["after"] == {"rules": saved}
    assert client.put("/admin/routes/chat/rules", headers=AUTH, json={"rules": []}).json()["rules"] == []


@pytest.mark.parametrize("body,param", [
    ({"rules": [{"name": "a", "target": "int8"}]}, "rules.0.target"),
    ({"rules": [{"name": "a", "when": {"task": ["poetry"]}, "target": "fp32"}]}, "rules.0.when.task"),
    ({"rules": [RULES[0], {"name": "b", "when": {"plan": "pro"}, "target": {"fp32": 60}}]}, "rules.1.target"),
    ({"rules": [{"name": "a", "when": {"max_tokens": {"max": "many"}}, "target": "fp32"}]},
     "rules.0.when.max_tokens.max"),
    ({"rules": "fp32"}, "rules"),
    ({"rule": []}, None),
])
def test_bad_rules_are_400_naming_the_field_and_change_nothing(client, body, param):
    client.put("/admin/routes/chat/rules", headers=AUTH, json={"rules": RULES[:1]})
    r = client.put("/admin/routes/chat/rules", headers=AUTH, json=body)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    if param is not None:
        assert error["param"] == param, error
    assert [x["name"] for x in client.get("/admin/routes/chat/rules", headers=AUTH).json()["rules"]] == ["free-small"]


def test_unknown_alias_is_404_and_the_admin_key_is_required(client):
    assert client.get("/admin/routes/nope/rules", headers=AUTH).status_code == 404
    assert client.put("/admin/routes/nope/rules", headers=AUTH, json={"rules": []}).status_code == 404
    assert client.put("/admin/routes/chat/rules", json={"rules": []}).status_code == 401
    assert client.get("/admin/routes/chat/rules").status_code == 401


def run_cli(client, capsys, *argv) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["routes", "--admin-key", KEY, *argv])
    rc = args.handler(args, Settings(), client=client)
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_cli(client, capsys, tmp_path):
    path = tmp_path / "rules.json"
    path.write_text(json.dumps(RULES[:1]))
    rc, out, _ = run_cli(client, capsys, "rules", "chat", "--set", str(path))
    assert rc == 0 and json.loads(out) == {**RULES[0], "target": {BF16: 100}}
    rc, out, _ = run_cli(client, capsys, "rules", "chat")
    assert rc == 0 and '"name": "free-small"' in out
    path.write_text("{")
    rc, _, err = run_cli(client, capsys, "rules", "chat", "--set", str(path))
    assert rc == 2 and "not JSON" in err
    path.write_text(json.dumps([{"name": "x", "target": "int8"}]))
    rc, _, err = run_cli(client, capsys, "rules", "chat", "--set", str(path))
    assert rc == 1 and "int8" in err
