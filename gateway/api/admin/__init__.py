"""The admin API (/admin/...): every route behind the admin credential."""
from fastapi import APIRouter, Depends

from gateway.api.admin import (audit, bills, economics, guardrails, keys, prices, prompts, reservations, tenants,
                               upstreams, webhooks)
from gateway.api.deps import require_admin

router = APIRouter(prefix="/admin", tags=["admin"], dependencies=[Depends(require_admin)])
for _module in (tenants, keys, prices, bills, audit, economics, prompts, webhooks, guardrails, upstreams,
                reservations):
    router.include_router(_module.router)

__all__ = ["router"]
