"""Gateway fixtures: one real app (SmolLM2 fp32 in process, loaded once per session) under
uvicorn, a migrated SQLite database behind it, and helpers to make tenants."""
from __future__ import annotations

import os

import pytest

from gateway.catalogue import load_catalogue
from gateway.settings import Settings
from tests.gateway.support import ADMIN_KEY, FP32, METRICS_TOKEN, LiveServer, migrate_and_seed

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def gw_catalogue():
    return load_catalogue(Settings().catalogue)


def gateway_settings(tmp, db_url: str, **extra) -> Settings:
    extra.setdefault("metrics_token", METRICS_TOKEN)
    return Settings(DATABASE_URL=db_url, REDIS_URL=extra.pop("redis_url", ""), data_dir=tmp,
                    admin_key=ADMIN_KEY, backend="inprocess", log_level="WARNING", **extra)


@pytest.fixture(scope="session")
def real_gateway(tmp_path_factory, gw_catalogue):
    """The gateway serving the real model, for the whole session: (LiveServer, settings)."""
    from gateway.main import create_app
    from gateway.serving.inprocess import InProcessBackend

    tmp = tmp_path_factory.mktemp("real-gateway")
    url = f"sqlite:///{tmp / 'tollgate.db'}"
    migrate_and_seed(url, gw_catalogue)
    settings = gateway_settings(tmp, url, request_timeout_s=60.0)
    backend = InProcessBackend(gw_catalogue, {"max_num_seqs": 16, "num_threads": 2}, versions=[FP32])
    with LiveServer(create_app(settings, backend=backend)) as server:
        yield server, settings
