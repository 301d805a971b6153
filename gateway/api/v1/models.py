"""GET /v1/models."""
from __future__ import annotations

from fastapi import APIRouter

from gateway.api.deps import TenantDep, key_allows_model
from gateway.services import AppServices
from gateway.schemas.openai import ModelCard, ModelList

router = APIRouter()


@router.get("/models")
async def list_models(principal: TenantDep, services: AppServices) -> ModelList:
    """The aliases, models and embedding models this API key may call."""
    names = [*services.router.names(), *services.catalogue.embeddings]
    created = int(services.started_at)
    return ModelList(data=[ModelCard(id=n, created=created) for n in names if key_allows_model(principal, n)])
