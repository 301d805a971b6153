"""POST /v1/batches, GET /v1/batches, GET /v1/batches/{batch_id}, POST /v1/batches/{batch_id}/cancel.
Routes only record what was asked; the runner (gateway.batch.runner) does the work. A tenant sees only its
own batches: any other id is a 404."""
from __future__ import annotations

import json
from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Query, Request

from gateway.api.deps import TenantDep
from gateway.api.v1.batches.files import count_request, file_not_found
from gateway.api.v1.batches.objects import batch_object
from gateway.api.v1.body import documented, parse
from gateway.batch.ids import BATCH_ID, FILE_ID, new_batch_id
from gateway.batch.store import BatchStore
from gateway.crud import batch_files, batches
from gateway.db.models.batch import Batch
from gateway.db.types import utcnow
from gateway.domain import batch_state as state
from gateway.domain.errors import APIError, invalid_request
from gateway.schemas.batch import BatchCreateRequest, BatchList, BatchObject
from gateway.services.deps import ServicesDep

router = APIRouter()


def batch_not_found(batch_id: str) -> APIError:
    return APIError(404, f"No such Batch object: {batch_id[:128]}", code="not_found")


def _poke(request: Request) -> None:
    runner = getattr(request.app.state, "batch_runner", None)
    if runner is not None:
        runner.poke()


@router.post("/batches", response_model=BatchObject, openapi_extra=documented(BatchCreateRequest))
async def create_batch(principal: TenantDep, services: ServicesDep, request: Request) -> BatchObject:
    """Create a batch from an uploaded JSONL file; it runs in the background (counted against your RPM)."""
    await count_request(services, principal)
    body = parse(BatchCreateRequest, await request.body())
    problem = body.problem()
    if problem is not None:
        raise invalid_request(f"{problem[0]}: {problem[1]}", param=problem[0])
    if body.endpoint == "/v1/embeddings" and not (services.settings.embeddings_enabled
                                                   and services.catalogue.embeddings):
        raise invalid_request("endpoint: embeddings are not served by this gateway.", param="endpoint")
    store = BatchStore(services.database)
    found = None
    if FILE_ID.fullmatch(body.input_file_id):
        found = await store.run(batch_files.get_file, tenant_id=principal.tenant_id, file_id=body.input_file_id)
    if found is None:
        raise file_not_found(body.input_file_id, param="input_file_id")
    if found.purpose != "batch":
        raise invalid_request("input_file_id: the file's purpose must be 'batch'.", param="input_file_id")
    now = utcnow()
    row = Batch(id=new_batch_id(), tenant_id=principal.tenant_id, key_id=principal.key_id, endpoint=body.endpoint,
                input_file_id=body.input_file_id, completion_window=body.completion_window,
                status=state.VALIDATING, errors=None,
                metadata_json=None if body.metadata is None else json.dumps(body.metadata).encode(),
                total=0, completed=0, failed=0, created_at=now,
                expires_at=now + timedelta(seconds=state.WINDOWS_S[body.completion_window]))
    await store.run(batches.create_batch, batch=row)
    _poke(request)
    return batch_object(row)


async def _batch(services, principal, batch_id: str) -> Batch:
    row = None
    if BATCH_ID.fullmatch(batch_id):
        row = await BatchStore(services.database).run(batches.get_batch, tenant_id=principal.tenant_id,
                                                      batch_id=batch_id)
    if row is None:
        raise batch_not_found(batch_id)
    return row


@router.get("/batches/{batch_id}", response_model=BatchObject)
async def retrieve_batch(batch_id: str, principal: TenantDep, services: ServicesDep) -> BatchObject:
    """One of your batches, with its progress."""
    return batch_object(await _batch(services, principal, batch_id))


@router.get("/batches", response_model=BatchList)
async def list_batches(principal: TenantDep, services: ServicesDep, after: str | None = None,
                       limit: Annotated[int, Query(ge=1, le=100)] = 20) -> BatchList:
    """Your batches, newest first."""
    rows = await BatchStore(services.database).run(batches.list_batches, tenant_id=principal.tenant_id,
                                                   limit=limit + 1, after=after)
    data = [batch_object(r) for r in rows[:limit]]
    return BatchList(data=data, has_more=len(rows) > limit, first_id=data[0].id if data else None,
                     last_id=data[-1].id if data else None)


@router.post("/batches/{batch_id}/cancel", response_model=BatchObject)
async def cancel_batch(batch_id: str, principal: TenantDep, services: ServicesDep, request: Request) -> BatchObject:
    """Cancel a batch: no new lines start; what is done goes to its output file."""
    await _batch(services, principal, batch_id)
    row = await BatchStore(services.database).run(batches.request_cancel, tenant_id=principal.tenant_id,
                                                  batch_id=batch_id, now=utcnow())
    if row.status not in (state.CANCELLING, state.CANCELLED):
        raise APIError(409, f"Cannot cancel a batch with status '{row.status}'.", code="batch_not_cancellable")
    _poke(request)
    return batch_object(row)
