from __future__ import annotations

import pytest

_RAY_FIXTURE = "ray_cluster"
_started: list[object] = []  # the Ray module, while a Ray instance this conftest started is up


def _uses_ray(item) -> bool:
    return item is not None and _RAY_FIXTURE in getattr(item, "fixturenames", ())


def _shut_down() -> None:
    if _started:
        from ray import serve

        ray = _started.pop()
        serve.shutdown()
        ray.shutdown()


@pytest.fixture(scope="module")
def ray_cluster():
    """One small local Ray instance for the Ray tests: started by the first module that asks, kept for the next,
    shut down after the last (the hook below). The Ray tests run last in their unit (tests/conftest.py), so the
    tests after them on this worker run without Ray's daemons, and Serve's controller polling beside them."""
    ray = pytest.importorskip("ray")
    if not _started:
        if ray.is_initialized():  # under pytest -n, an earlier test in this worker process may have joined one
            ray.shutdown()
        ray.init(num_cpus=2, include_dashboard=False, namespace="tollgate", log_to_driver=False)
        _started.append(ray)
    yield ray


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    yield  # the module's own fixtures (deployments, backends) are torn down first
    if _uses_ray(item) and not _uses_ray(nextitem):
        _shut_down()


def pytest_sessionfinish(session):
    _shut_down()
