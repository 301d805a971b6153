"""Suite-wide set-up that must happen before any test module imports its code."""
from __future__ import annotations

import os

# Triton kernels run on CPU tensors only under its interpreter, and triton.jit picks the interpreter when
# the kernel's module is imported: set it before anything imports workers.kernels.triton. On a machine
# with a GPU, set TRITON_INTERPRET=0 to test the compiled kernels instead.
os.environ.setdefault("TRITON_INTERPRET", "1")


import pytest


@pytest.fixture(scope="session")
def gw_catalogue():
    from gateway.catalogue import load_catalogue
    from gateway.settings import Settings

    return load_catalogue(Settings().catalogue)


@pytest.fixture(scope="session")
def real_gateway(tmp_path_factory, gw_catalogue):
    """The gateway serving the real model (SmolLM2 fp32 in process), one for the whole session, shared by the
    gateway tests and tests/conformance: (LiveServer, settings)."""
    from gateway.main import create_app
    from gateway.serving.inprocess import InProcessBackend
    from tests.gateway.conftest import gateway_settings
    from tests.gateway.support import FP32, LiveServer, migrate_and_seed

    tmp = tmp_path_factory.mktemp("real-gateway")
    url = f"sqlite:///{tmp / 'tollgate.db'}"
    migrate_and_seed(url, gw_catalogue)
    settings = gateway_settings(tmp, url, request_timeout_s=60.0)
    backend = InProcessBackend(gw_catalogue, {"max_num_seqs": 16, "num_threads": 2}, versions=[FP32])
    with LiveServer(create_app(settings, backend=backend)) as server:
        yield server, settings
