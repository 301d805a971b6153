"""The backend registry and the in-process backend's construction (no model loaded here:
the real-model path runs in tests/gateway/api/v1)."""
from __future__ import annotations

import pytest

from gateway.serving.factory import BACKENDS, build_backend
from gateway.serving.inprocess import InProcessBackend
from gateway.settings import Settings
from tests.gateway.support import FP32


def test_registry_builds_the_inprocess_backend(gw_catalogue):
    backend = build_backend(Settings(backend="inprocess"), gw_catalogue)
    assert isinstance(backend, InProcessBackend)
    assert backend.versions() == []  # nothing is loaded before start()


def test_unknown_backend_names_the_choices(gw_catalogue):
    with pytest.raises(ValueError, match=r"inprocess.*ray"):
        build_backend(Settings(backend="carrier-pigeon"), gw_catalogue)
    assert "carrier-pigeon" not in BACKENDS


def test_a_subset_of_versions_with_engine_overrides(gw_catalogue):
    backend = InProcessBackend(gw_catalogue, {"max_num_seqs": 4}, versions=[FP32])
    assert list(backend._configs) == [FP32]
    config = backend._configs[FP32]
    assert (config.model, config.dtype, config.max_num_seqs, config.block_size) == \
        ("smollm2-135m-instruct", "float32", 4, 16)
    with pytest.raises(KeyError):
        InProcessBackend(gw_catalogue, versions=["smollm2-135m-instruct@int3"])


async def test_an_unloaded_version_is_unavailable(gw_catalogue):
    from gateway.serving.base import GenerationRequest, VersionUnavailable

    backend = InProcessBackend(gw_catalogue, versions=[FP32])
    with pytest.raises(VersionUnavailable):
        await anext(backend.stream(GenerationRequest(request_id="r", version=FP32, prompt="hi")))


def test_ray_is_registered():
    assert set(BACKENDS) >= {"inprocess", "ray"}
