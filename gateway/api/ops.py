"""Operations endpoints: metrics, liveness, readiness."""
from __future__ import annotations

import asyncio
import logging

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST
from sqlalchemy import text

from gateway.services import AppServices

router = APIRouter(tags=["ops"])
log = logging.getLogger("tollgate.ops")


@router.get("/metrics")
async def metrics(services: AppServices) -> Response:
    """Prometheus exposition of this process's metrics."""
    return Response(services.metrics.render(), media_type=CONTENT_TYPE_LATEST)


@router.get("/healthz")
async def healthz() -> dict:
    """The process is up."""
    return {"status": "ok"}


@router.get("/readyz")
async def readyz(services: AppServices) -> JSONResponse:
    """Ready when the database answers and at least one version can serve."""
    checks = {"database": await asyncio.to_thread(_database_ok, services), "accepting": services.drain.accepting}
    versions = await services.backend.health()
    checks["backend"] = any(versions.values())
    ready = all(checks.values())
    return JSONResponse({"status": "ready" if ready else "not_ready", "checks": checks, "versions": versions},
                        status_code=200 if ready else 503)


def _database_ok(services) -> bool:
    try:
        with services.database.engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        return True
    except Exception as e:  # readiness reports (and logs) the failure rather than raising it
        log.warning("database not reachable: %s", e)
        return False
