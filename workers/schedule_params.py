"""How the engine orders a request against others (not what it generates: that is SamplingParams)."""
from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field

from workers.validation import Checked

PRIORITY_RANGE = (-1_000_000, 1_000_000)


class ScheduleParams(Checked):
    model_config = ConfigDict(frozen=True)  # hashable: a queue key
    # Lower runs earlier (vLLM's convention); waiting requests of a lower number displace running ones.
    priority: Annotated[int, Field(ge=PRIORITY_RANGE[0], le=PRIORITY_RANGE[1])] = 0
    # Fair share: an opaque key for whoever is served (the gateway's per-tenant HMAC, never its identity),
    # and its weight (2.0: twice the share of a tenant weighted 1.0). None: one anonymous tenant.
    tenant: Annotated[str, Field(min_length=1, max_length=256)] | None = None
    weight: Annotated[float, Field(gt=0, le=1e6)] = 1.0
    # Reserved throughput: output tokens/s the tenant's reservation guarantees on this model; its work runs
    # ahead of best-effort work up to that rate (workers/engine/reservations.py). 0: best-effort only.
    reserved_tokens_per_s: Annotated[float, Field(ge=0, le=1e9)] = 0.0
