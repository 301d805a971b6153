"""Operations endpoints: metrics (behind the metrics token), liveness, readiness."""
from __future__ import annotations

import asyncio
import logging
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST
from sqlalchemy import text

from gateway.api.deps import bearer_token, check_credential
from gateway.domain.errors import invalid_api_key
from gateway.security.authenticator import InvalidKey
from gateway.security.secret_file import secret_matches
from gateway.services.deps import ServicesDep

router = APIRouter(tags=["ops"])
log = logging.getLogger("tollgate.ops")


async def require_metrics_reader(request: Request) -> None:
    """The metrics token (or the admin key) as Bearer; anything else is a 401, under the failed-attempt
    throttle like every credential (a 429 once an address or prefix failed too often)."""
    services = request.app.state.services
    token = bearer_token(request)

    async def verify(_slot) -> None:
        if not (secret_matches(token, services.metrics_token) or secret_matches(token, services.admin_key)):
            raise InvalidKey("Incorrect metrics token provided: send TOLLGATE_METRICS_TOKEN (or the token in "
                             "<data_dir>/metrics_token) as a Bearer token.")

    try:
        await check_credential(request, token, verify)
    except InvalidKey as e:
        raise invalid_api_key(str(e)) from e


MetricsReaderDep = Annotated[None, Depends(require_metrics_reader)]


@router.get("/metrics")
async def metrics(_: MetricsReaderDep, services: ServicesDep) -> Response:
    """Prometheus exposition of this process's metrics."""
    return Response(services.metrics.render(), media_type=CONTENT_TYPE_LATEST)


@router.get("/healthz")
async def healthz() -> dict:
    """The process is up."""
    return {"status": "ok"}


@router.get("/readyz")
async def readyz(services: ServicesDep) -> JSONResponse:
    """Ready when a version can serve, the gateway accepts work, usage can be recorded somewhere, and no start-up
    warm-up is still running (the semantic cache's verifier: most of a core for ~15-20 s, which a small pool's
    first traffic would share).

    The database is reported, not required: through an outage known keys still authenticate (grace period)
    and usage rows spool to disk, so taking every replica out of a load balancer would turn a database
    outage into a full one. Only a full spool (database down and no room left to record usage) gates."""
    database = await asyncio.to_thread(_database_ok, services)
    versions = await services.backend.health()
    checks = {"accepting": services.drain.accepting, "backend": any(versions.values()),
              "usage_recording": database or services.ledger.has_room(),
              "warm": services.cache is None or not services.cache.warming}
    ready = all(checks.values())
    checks["database"] = database
    return JSONResponse({"status": ("ready" if database else "degraded") if ready else "not_ready",
                         "checks": checks, "versions": versions}, status_code=200 if ready else 503)


@router.get("/health")
async def health(services: ServicesDep) -> Response:
    """200 when ready to serve, as vLLM's and TGI's servers answer it (load tools probe this path)."""
    ready = await readyz(services)
    return Response(status_code=ready.status_code)


def _database_ok(services) -> bool:
    try:
        with services.database.engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        return True
    except Exception as e:  # readiness reports (and logs) the failure rather than raising it
        log.warning("database not reachable: %s", e)
        return False
