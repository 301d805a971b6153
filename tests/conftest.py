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
    from tests.cores import ENGINE_THREADS
    from tests.gateway.conftest import gateway_settings
    from tests.gateway.support import FP32, LiveServer, migrate_and_seed

    tmp = tmp_path_factory.mktemp("real-gateway")
    url = f"sqlite:///{tmp / 'tollgate.db'}"
    migrate_and_seed(url, gw_catalogue)
    settings = gateway_settings(tmp, url, request_timeout_s=60.0)
    backend = InProcessBackend(gw_catalogue, {"max_num_seqs": 16, "num_threads": ENGINE_THREADS}, versions=[FP32])
    with LiveServer(create_app(settings, backend=backend)) as server:
        yield server, settings


# `make test-fast` runs `-m "not slow and not postgres"`: no model, no Ray, no browser, no Triton interpreter,
# no servers of the test's own. A test is slow when it asks for one of these session fixtures (loading the
# model or starting the thing), sits in a folder that is all such tests, or says so itself (@pytest.mark.slow).
SLOW_FIXTURES = frozenset({"model_runner", "dense_runner", "hf_model", "hf_tokenizer", "hf_references", "real_llm",
                           "real_gateway", "gguf_path", "embedder", "ray_cluster", "browser", "console_server",
                           "fuzzed", "two_gateways"})
SLOW_FOLDERS = ("conformance", "console", "faults", "workers/kernels/triton", "workers/serve", "gateway/embedding")
SLOW_MARKERS = ("model", "ray")


def pytest_collection_modifyitems(config, items):
    root = config.rootpath / "tests"
    folders = tuple(root / folder for folder in SLOW_FOLDERS)
    for item in items:
        if (SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ()))
                or any(item.path.is_relative_to(f) for f in folders)
                or any(item.get_closest_marker(m) for m in SLOW_MARKERS)):
            item.add_marker(pytest.mark.slow)
    # The Ray tests last (a stable sort: every other order is kept), so the tests before them in their unit run
    # without a Ray instance beside them: the engine's reference tests took 33 s after Ray, 8.7 s alone
    # (tests/scheduling.py).
    items.sort(key=lambda item: "ray_cluster" in getattr(item, "fixturenames", ()))


def pytest_xdist_make_scheduler(config, log):
    """`make test`'s workers: files sharing Ray or the reference model together, the longest first
    (tests/scheduling.py)."""
    if config.getoption("dist") != "loadfile":
        return None  # another --dist mode asked for by hand: xdist's own
    from tests.scheduling import GroupedFileScheduling

    return GroupedFileScheduling(config, log)
