from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def ray_cluster():
    """One small local Ray instance for every Ray test of the session, shut down at the end. Not earlier: once
    Ray is shut down, a Ray object the process still holds (a handle's, a reply's) makes the worker exit when it
    is collected ("The core worker has already been shutdown"), and a fresh clone's run lost its worker so."""
    ray = pytest.importorskip("ray")
    from ray import serve

    if ray.is_initialized():  # under pytest -n, an earlier test in this worker process may have joined one
        ray.shutdown()
    # Workers at Ray's default niceness (15), not the nice 0 a gateway's own Ray gives them: under `pytest -n 2` this
    # pool's replicas share the cores with the other worker's tests, whose gateways must keep their deadlines.
    ray.init(num_cpus=2, include_dashboard=False, namespace="tollgate", log_to_driver=False)
    yield ray
    serve.shutdown()
    ray.shutdown()
