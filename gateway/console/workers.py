"""Workers: replicas per version and their state, KV-cache use, running and waiting requests, tokens/s,
preemptions, and the autoscaler's targets from the catalogue."""
from __future__ import annotations

import time
from collections import defaultdict

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import REGISTRY

from gateway.console.render import render
from gateway.console.state import console_state
from gateway.console.viewer import AdminViewerDep
from gateway.services.deps import ServicesDep

router = APIRouter()
ENGINE = "tollgate:"  # the engines' series (workers.engine.metrics), per version as `model_name`


def engine_figures(registry=REGISTRY) -> dict[str, dict[str, float]]:
    """Per version: each engine series summed over replicas (gauges and counters alike)."""
    out: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for family in registry.collect():
        if not family.name.startswith(ENGINE) or family.type not in ("gauge", "counter"):
            continue
        for sample in family.samples:
            version = sample.labels.get("model_name")
            if version and not sample.name.endswith("_created"):
                out[version][sample.name[len(ENGINE):]] += sample.value
    return out



@router.get("/workers")
async def workers(request: Request, viewer: AdminViewerDep, services: ServicesDep) -> Response:
    """What each version's replicas are doing now."""
    backend = services.backend
    health = await backend.health()
    counts = backend.replica_counts() if hasattr(backend, "replica_counts") else {}
    figures, now = engine_figures(), time.monotonic()
    rows = []
    for info in backend.versions():
        _, _, spec = services.catalogue.version(info.name)
        f = figures.get(info.name, {})
        used, total = f.get("kv_blocks_used"), f.get("kv_blocks_total")
        rows.append({
            "version": info.name, "healthy": health.get(info.name, False), "replicas": counts.get(info.name),
            "kv_use": used / total if used is not None and total else None,
            "running": f.get("num_requests_running"), "waiting": f.get("num_requests_waiting"),
            "tokens_per_s": console_state(request).token_rate.rate(info.name, f.get("generation_tokens_total", 0.0),
                                                                   now),
            "preemptions": f.get("num_preemptions_total"), "spec": spec.replicas})
    return render(request, "workers.html", viewer, rows=rows, backend=services.settings.backend)
