"""GET /v1/models and GET /v1/models/{model}."""
from __future__ import annotations

from fastapi import APIRouter

from gateway.api.deps import TenantDep
from gateway.security.principal import key_allows_model
from gateway.domain.errors import model_not_found
from gateway.services.deps import ServicesDep
from gateway.schemas.openai import ModelCard, ModelList

router = APIRouter()


@router.get("/models")
async def list_models(principal: TenantDep, services: ServicesDep) -> ModelList:
    """The aliases, models and embedding models this API key may call."""
    names = [*services.router.names(), *services.catalogue.embeddings]
    created = int(services.started_at)
    return ModelList(data=[ModelCard(id=n, created=created) for n in names if key_allows_model(principal, n)])


@router.get("/models/{model:path}")
async def retrieve_model(model: str, principal: TenantDep, services: ServicesDep) -> ModelCard:
    """One model this API key may call; 404 model_not_found otherwise (as for a model that does not exist)."""
    names = {*services.router.names(), *services.catalogue.embeddings}
    if model not in names or not key_allows_model(principal, model):
        raise model_not_found(model)
    return ModelCard(id=model, created=int(services.started_at))
