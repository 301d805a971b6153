"""The Files and Batch APIs (OpenAI's), and the runner's link to the endpoint pipelines."""
from __future__ import annotations

from fastapi import APIRouter

from gateway.api.v1.batches import files, routes
from gateway.api.v1.batches.execute import LineExecutor
from gateway.batch.runner import BatchRunner, RunnerConfig
from gateway.batch.store import BatchStore
from gateway.services import Services

router = APIRouter()
router.include_router(files.router)
router.include_router(routes.router)


def build_runner(services: Services) -> BatchRunner:
    """This process's batch runner, from the gateway's settings."""
    s = services.settings
    config = RunnerConfig(concurrency=s.batch_concurrency, max_batches=s.batch_max_active, poll_s=s.batch_poll_s,
                          lease_s=s.batch_lease_s, stop_timeout_s=s.drain_timeout_s,
                          max_requests=s.batch_max_requests, output_expires_s=s.batch_output_expires_s,
                          sweep_s=s.files_sweep_s, max_output_bytes=s.batch_max_output_bytes,
                          max_line_output_bytes=s.batch_max_line_output_bytes, files_quota=s.files_max_bytes_per_tenant)
    return BatchRunner(BatchStore(services.database), LineExecutor(services, priority=s.batch_priority), config)
