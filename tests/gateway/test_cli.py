"""`tollgate`: migrate and serve locally; admin commands against a gateway over real HTTP."""
import json
import socket
import threading
import time

import pytest
import uvicorn
from sqlalchemy import create_engine, inspect

from gateway.billing.prices import PriceBook
from gateway.catalogue import load_catalogue
from gateway.cli import build_parser, main
from gateway.db.database import Database
from gateway.settings import Settings
from gateway.db.migrate import upgrade
from tests.gateway.data_fixtures import (  # noqa: F401
    TEST_ADMIN_KEY, data_app, data_services, database, deploy_catalogue, sqlite_url)


@pytest.fixture
def db_url(sqlite_url):  # the CLI is about HTTP and argv, not the database: SQLite is enough
    return sqlite_url


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for name in ("TOLLGATE_ADMIN_KEY", "TOLLGATE_METRICS_TOKEN", "DATABASE_URL", "TOLLGATE_HOST", "TOLLGATE_PORT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TOLLGATE_DATA_DIR", str(tmp_path / "cli-data"))


@pytest.fixture
def gateway_url(data_app):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(data_app, host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def run(capsys, *argv) -> tuple[int, str, str]:
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def admin(capsys, url, *argv) -> dict | str:
    rc, out, err = run(capsys, "admin", *argv, "--url", url, "--admin-key", TEST_ADMIN_KEY)
    assert rc == 0, err
    return json.loads(out) if out.lstrip().startswith("{") else out


def test_the_whole_admin_flow(capsys, gateway_url, tmp_path):
    tenant = admin(capsys, gateway_url, "tenants", "create", "acme", "--rpm", "10", "--budget", "1000",
                   "--cache-allow-sampling", "true", "--cache-threshold", "0.9")
    assert (tenant["rpm"], tenant["monthly_token_budget"], tenant["cache_allow_sampling"]) == (10, 1000, True)
    tid = tenant["id"]
    assert [t["name"] for t in admin(capsys, gateway_url, "tenants", "list")["data"]] == ["acme"]
    updated = admin(capsys, gateway_url, "tenants", "update", tid, "--rpm", "none", "--status", "disabled")
    assert (updated["rpm"], updated["status"], updated["monthly_token_budget"]) == (None, "disabled", 1000)
    assert admin(capsys, gateway_url, "tenants", "update", tid, "--plan", "pro")["plan"] == "pro"
    assert admin(capsys, gateway_url, "tenants", "update", tid, "--plan", "none")["plan"] is None

    key = admin(capsys, gateway_url, "keys", "create", tid, "--model", "chat", "--tpm", "99")
    assert key["key"].startswith("tg-") and key["models"] == ["chat"]
    listed = admin(capsys, gateway_url, "keys", "list", tid)
    assert key["key"] not in json.dumps(listed)
    assert admin(capsys, gateway_url, "keys", "revoke", key["id"])["revoked_at"]

    price = admin(capsys, gateway_url, "prices", "set", "smollm2-135m-instruct", "--input", "0.2",
                  "--output", "0.4000000001", "--effective-from", "2026-01-01T00:00:00Z")
    assert price["output_per_million"] == "0.4000000001"
    assert len(admin(capsys, gateway_url, "prices", "list")["data"]) == 3

    bill = admin(capsys, gateway_url, "bill", "--tenant", tid, "--month", "2026-11")
    assert bill["tenant_id"] == tid and bill["total_cost"] == "0"
    assert admin(capsys, gateway_url, "bills", "--month", "2026-11")["month"] == "2026-11"
    csv_text = admin(capsys, gateway_url, "usage-csv", "--month", "2026-11")
    assert csv_text.startswith("request_id,created_at,tenant_id")
    out_file = tmp_path / "usage.csv"
    admin(capsys, gateway_url, "usage-csv", "--month", "2026-11", "-o", str(out_file))
    assert out_file.read_bytes().decode() == csv_text  # CRLF rows, as the CSV RFC has them


def test_prompts_show_their_owner(capsys, gateway_url, tmp_path):
    tid = admin(capsys, gateway_url, "tenants", "create", "owner")["id"]
    content = tmp_path / "prompt.json"
    content.write_text(json.dumps({"messages": [{"role": "system", "content": "Hi {{name}}"}]}))
    assert admin(capsys, gateway_url, "prompts", "create", "mine", "--file", str(content),
                 "--tenant", tid)["tenant_id"] == tid
    assert admin(capsys, gateway_url, "prompts", "create", "ours", "--file", str(content))["tenant_id"] is None
    listed = admin(capsys, gateway_url, "prompts", "list")["data"]
    assert [(p["name"], p["tenant_id"]) for p in listed] == [("mine", tid), ("ours", None)]
    assert [p["name"] for p in admin(capsys, gateway_url, "prompts", "list", "--tenant", tid)["data"]] == ["mine"]
    assert admin(capsys, gateway_url, "prompts", "show", "mine")["tenant_id"] == tid


def test_gateway_errors_are_reported_with_exit_code_1(capsys, gateway_url):
    rc, out, err = run(capsys, "admin", "bill", "--tenant", "nope", "--url", gateway_url,
                       "--admin-key", TEST_ADMIN_KEY)
    assert rc == 1 and out == "" and "404" in err and "nope" in err
    rc, _, err = run(capsys, "admin", "bills", "--month", "2026-13", "--url", gateway_url,
                     "--admin-key", TEST_ADMIN_KEY)
    assert rc == 1 and "month" in err
    rc, _, err = run(capsys, "admin", "tenants", "list", "--url", gateway_url, "--admin-key", "wrong")
    assert rc == 1 and "401" in err


def test_admin_key_comes_from_the_data_dir_file(capsys, gateway_url, tmp_path):
    (tmp_path / "cli-data").mkdir()
    (tmp_path / "cli-data" / "admin_key").write_text(TEST_ADMIN_KEY + "\n")
    rc, out, _ = run(capsys, "admin", "tenants", "list", "--url", gateway_url)
    assert rc == 0 and json.loads(out)["object"] == "list"


def test_no_admin_key_anywhere_says_where_to_look(capsys):
    with pytest.raises(SystemExit, match="admin_key"):
        main(["admin", "tenants", "list", "--url", "http://127.0.0.1:9"])


def test_unreachable_gateway(capsys):
    rc, _, err = run(capsys, "admin", "tenants", "list", "--url", "http://127.0.0.1:9", "--admin-key", "k")
    assert rc == 1 and "cannot reach" in err


def test_migrate_up_and_down(capsys, monkeypatch, tmp_path):
    url = f"sqlite:///{tmp_path / 'm' / 'tollgate.db'}"
    monkeypatch.setenv("DATABASE_URL", url)
    rc, _, err = run(capsys, "migrate")
    assert rc == 0 and "seeded for: smollm2-135m-instruct, all-minilm-l6-v2" in err
    assert "replica-hour prices seeded for: smollm2-135m-instruct@fp32, smollm2-135m-instruct@bf16" in err
    engine = create_engine(url)
    assert {"tenants", "api_keys", "prices", "usage_ledger", "version_costs",
            "replica_minutes"} <= set(inspect(engine).get_table_names())
    rc, _, err = run(capsys, "migrate")  # again: nothing to do, prices untouched
    assert rc == 0 and "seeded" not in err
    assert PriceBook(Database(url)).missing_prices(load_catalogue(Settings().catalogue)) == []
    rc, out, _ = run(capsys, "audit", "list")  # the seeded prices are audited, by the migrate command
    rows = [json.loads(line) for line in out.splitlines()]
    assert rc == 0 and {r["actor"] for r in rows} == {"migrate:local"}
    assert sorted((r["action"], r["target"]["id"]) for r in rows) == [
        ("price.set", "all-minilm-l6-v2"), ("price.set", "smollm2-135m-instruct"),
        ("version_cost.set", "smollm2-135m-instruct@bf16"), ("version_cost.set", "smollm2-135m-instruct@fp32")]
    assert run(capsys, "audit", "verify")[0] == 0
    assert run(capsys, "migrate", "--down")[0] == 0
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    engine.dispose()


def test_serve_refuses_a_database_behind_the_migrations(capsys, monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append((app, kw)))
    url = f"sqlite:///{tmp_path / 'old.db'}"
    monkeypatch.setenv("DATABASE_URL", url)
    upgrade(url, "0003")  # an older gateway's schema
    with pytest.raises(SystemExit, match="run `tollgate migrate` first"):
        run(capsys, "serve")
    assert calls == []
    upgrade(url)
    assert run(capsys, "serve")[0] == 0 and len(calls) == 1
    monkeypatch.setenv("DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none?connect_timeout=1")
    rc, _, err = run(capsys, "serve")  # unreachable: starts degraded, as a gateway whose database is down
    assert rc == 0 and "could not check the database schema" in err


def test_serve_prints_the_admin_key_file_and_runs_the_app_factory(capsys, monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append((app, kw)))
    url = f"sqlite:///{tmp_path / 'serve.db'}"
    monkeypatch.setenv("DATABASE_URL", url)
    upgrade(url)
    rc, _, err = run(capsys, "serve", "--port", "9999")
    key_file, token_file = tmp_path / "cli-data" / "admin_key", tmp_path / "cli-data" / "metrics_token"
    assert rc == 0 and key_file.exists() and str(key_file) in err
    assert token_file.exists() and str(token_file) in err
    [(app, kw)] = calls
    assert app == "gateway.main:create_app" and kw["factory"] is True and kw["port"] == 9999
    assert kw["timeout_graceful_shutdown"] == 30.0
    # Trusted proxies from TOLLGATE_FORWARDED_ALLOW_IPS (by default uvicorn's own: a proxy on this host).
    assert kw["proxy_headers"] is True and kw["forwarded_allow_ips"] == "127.0.0.1"

    monkeypatch.setenv("TOLLGATE_ADMIN_KEY", "from-env-" + "k" * 32)
    rc, _, err = run(capsys, "serve")
    assert "TOLLGATE_ADMIN_KEY" in err

    monkeypatch.setenv("TOLLGATE_ADMIN_KEY", "from-env")  # too short: refused before anything starts
    calls.clear()
    with pytest.raises(SystemExit, match="at least 32 characters"):
        run(capsys, "serve")
    assert calls == []


def test_every_command_parses():
    parser = build_parser()
    for argv in (["serve"], ["migrate", "--down"], ["admin", "tenants", "list"],
                 ["admin", "keys", "revoke", "k"], ["admin", "prices", "list"],
                 ["admin", "bills"], ["admin", "usage-csv", "--tenant", "t"], ["admin", "costs", "list"],
                 ["admin", "costs", "set", "m@v", "--per-replica-hour", "1"],
                 ["admin", "economics", "--month", "2026-11", "--csv"]):
        assert callable(parser.parse_args(argv).handler)
    update = parser.parse_args(["admin", "tenants", "update", "t", "--tpm", "none"])
    assert update.build(update).body == {"tpm": None}  # only what was given, null clears


def test_economics_and_replica_hour_prices(capsys, gateway_url, tmp_path):
    version = "smollm2-135m-instruct@fp32"
    cost = admin(capsys, gateway_url, "costs", "set", version, "--per-replica-hour", "0.085", "--hardware",
                 "2 vCPU", "--effective-from", "2026-01-01T00:00:00Z")
    assert (cost["per_replica_hour"], cost["hardware"], cost["current"]) == ("0.085", "2 vCPU", True)
    assert [c["version"] for c in admin(capsys, gateway_url, "costs", "list")["data"]] == [version]
    report = admin(capsys, gateway_url, "economics", "--month", "2026-11", "--utilisation", "0.8")
    assert report["object"] == "economics" and report["month"] == "2026-11" and report["utilisation"] == "0.8"
    text = admin(capsys, gateway_url, "economics", "--month", "2026-11", "--csv")
    assert text.splitlines()[0].startswith("level,model,version,tenant_id")
    out = tmp_path / "economics.csv"
    admin(capsys, gateway_url, "economics", "--month", "2026-11", "--csv", "-o", str(out))
    assert out.read_text().splitlines() == text.splitlines()
    rc, _, err = run(capsys, "admin", "economics", "--month", "2026-13", "--url", gateway_url,
                     "--admin-key", TEST_ADMIN_KEY)
    assert rc == 1 and "error (400)" in err
