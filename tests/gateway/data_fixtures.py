"""Data-layer fixtures: databases on SQLite and PostgreSQL, and a small app with the admin and
usage routers over a services container. Imported by the conftest.py of each data-layer test
folder (tests/gateway/{db,security,billing,api/admin,api/v1}) and by test_cli.py."""
from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

import gateway.db.models  # noqa: F401  (registers the tables)
from gateway.api.admin import router as admin_router
from gateway.api.errors import install_error_handlers
from gateway.api.v1.usage import router as usage_router
from gateway.billing.ledger import Ledger
from gateway.billing.prices import PriceBook, seed_prices_from_catalogue
from gateway.catalogue import load_catalogue
from gateway.db.base import Base
from gateway.db.database import Database
from gateway.security.authenticator import KeyAuthenticator
from gateway.security.secret_box import SecretBox
from gateway.settings import Settings

PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/tollgate_test"
TEST_ADMIN_KEY = "tga-test-admin-key-0123456789abcdef"  # >= 32 characters, as start-up requires
ADMIN = {"Authorization": f"Bearer {TEST_ADMIN_KEY}"}

__all__ = ["ADMIN", "TEST_ADMIN_KEY", "admin_http", "assert_openai_error", "bearer", "data_app", "data_services",
           "database", "db_url", "deploy_catalogue", "new_tenant_key", "pg_url", "sqlite_url"]


@contextmanager
def fresh_pg_schema(prefix: str = "t") -> Iterator[str]:
    """A URL into a new PostgreSQL schema, dropped with everything in it on exit."""
    schema = f"{prefix}_{uuid.uuid4().hex[:16]}"
    admin = create_engine(PG_URL, poolclass=NullPool)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        yield f"{PG_URL}?options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture
def pg_url():
    """A fresh schema per test: tests never see each other's rows."""
    with fresh_pg_schema() as url:
        yield url


@pytest.fixture
def sqlite_url(tmp_path):
    return f"sqlite:///{tmp_path / 'tollgate.db'}"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request):
    return request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url")


@pytest.fixture
def database(db_url):
    """A Database with every registered table, on SQLite and on PostgreSQL."""
    db = Database(db_url)
    Base.metadata.create_all(db.engine)
    yield db
    db.dispose()


@pytest.fixture
def deploy_catalogue():
    return load_catalogue(Settings().catalogue)


@pytest.fixture
def data_services(database, deploy_catalogue, tmp_path):
    """The services container the admin and usage routes read (prices seeded from the catalogue)."""
    with database.session() as session:
        seed_prices_from_catalogue(session, deploy_catalogue)
    prices = PriceBook(database)
    settings = Settings(data_dir=tmp_path, admin_key=TEST_ADMIN_KEY)
    return SimpleNamespace(database=database, prices=prices, catalogue=deploy_catalogue, settings=settings,
                           ledger=Ledger(database, prices, settings.currency, linger_s=0),
                           authenticator=KeyAuthenticator(database), admin_key=TEST_ADMIN_KEY,
                           secret_box=SecretBox.for_gateway(settings.secret_key, TEST_ADMIN_KEY))


@pytest.fixture
def data_app(data_services):
    app = FastAPI()
    install_error_handlers(app)
    app.include_router(admin_router)
    app.include_router(usage_router, prefix="/v1")
    app.state.services = data_services
    return app


@pytest.fixture
def admin_http(data_app):
    """An httpx client on data_app (in process, no server)."""
    return httpx.AsyncClient(transport=httpx.ASGITransport(data_app), base_url="http://gateway")


async def new_tenant_key(client: httpx.AsyncClient, name: str, **key_body) -> tuple[str, dict]:
    """Create a tenant and a key through the admin API: (tenant id, key response)."""
    r = await client.post("/admin/tenants", json={"name": name}, headers=ADMIN)
    assert r.status_code == 201, r.text
    tenant_id = r.json()["id"]
    r = await client.post(f"/admin/tenants/{tenant_id}/keys", json=key_body, headers=ADMIN)
    assert r.status_code == 201, r.text
    return tenant_id, r.json()


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def assert_openai_error(resp: httpx.Response, status: int, *, param: str | None = None,
                        code: str | None = None) -> dict:
    assert resp.status_code == status, resp.text
    error = resp.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"]
    if param is not None:
        assert error["param"] == param, error
    if code is not None:
        assert error["code"] == code, error
    return error
