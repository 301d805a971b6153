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
    from workers.serve.placement import LOCAL_RAY_SYSTEM_CONFIG

    # As a gateway starts its own Ray (gateway/serving/ray_backend.py).
    ray.init(num_cpus=2, include_dashboard=False, namespace="tollgate", log_to_driver=False,
             _system_config=LOCAL_RAY_SYSTEM_CONFIG)
    yield ray
    serve.shutdown()
    ray.shutdown()
