"""A version at capacity refuses new work before the first chunk, so the gateway can fall back."""
from __future__ import annotations

import asyncio

import pytest
import pytest_asyncio

from gateway.catalogue import parse_catalogue
from gateway.serving.base import GenerationRequest, VersionOverloaded
from gateway.settings import Settings

ray_backend = pytest.importorskip("gateway.serving.ray_backend")

pytestmark = [pytest.mark.ray, pytest.mark.asyncio(loop_scope="session")]

VERSION = "overload-test@fp32"
CATALOGUE = {"models": {"overload-test": {
    "weights": "smollm2-135m-instruct", "price": {"input_per_million": 1},
    "versions": {"fp32": {"engine": {"num_kv_blocks": 64, "max_num_seqs": 4, "num_threads": 1,
                                     "max_num_batched_tokens": 256},
                          "replicas": {"min": 1, "max": 1, "num_cpus": 0.25, "max_queued_requests": 1}}}}}}


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def backend(ray_cluster):
    from ray import serve

    b = ray_backend.RayServeBackend(Settings(request_timeout_s=60), parse_catalogue(CATALOGUE),
                                    max_ongoing_requests=1, env={"OMP_NUM_THREADS": "1"})
    await b.start()
    yield b
    await b.stop()
    serve.delete("tg-overload-test-fp32")


async def test_full_queue_is_overloaded_before_the_first_chunk(backend):
    def long(i: int) -> GenerationRequest:
        return GenerationRequest(f"long-{i}", VERSION, prompt="Tell a long story.", max_tokens=300,
                                 temperature=0, ignore_eos=True)

    running = backend.stream_raw(long(0))
    first = await running.__anext__()  # one request on the replica (max_ongoing_requests=1)
    waiting = backend.stream_raw(long(1))
    queued = asyncio.ensure_future(waiting.__anext__())  # one waiting at the handle
    await asyncio.sleep(0.5)
    with pytest.raises(VersionOverloaded):
        async for _ in backend.stream_raw(long(2)):  # the third has no room anywhere
            pass
    assert first.version == VERSION
    await running.aclose()
    second = await asyncio.wait_for(queued, 30)  # the queued one runs once the first leaves
    assert second.version == VERSION
    await waiting.aclose()
