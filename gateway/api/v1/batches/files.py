"""POST /v1/files (purpose "batch", JSONL, size-capped, within the tenant's storage quota, optionally expiring),
GET /v1/files, GET and DELETE /v1/files/{file_id},
GET /v1/files/{file_id}/content. A tenant sees only its own unexpired files: any other id is a 404."""
from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from gateway.api.deps import TenantDep
from gateway.api.v1.batches.multipart import parse_form
from gateway.api.v1.batches.objects import file_object
from gateway.api.v1.pipeline.admit import reserve_tokens
from gateway.batch.expiry import InvalidExpiry, expires_at
from gateway.batch.ids import FILE_ID, new_file_id
from gateway.batch.input import InvalidInput, check_jsonl
from gateway.batch.store import BatchStore
from gateway.batch.uploads import TooManyUploads
from gateway.crud import batch_files
from gateway.db.types import utcnow
from gateway.domain.errors import APIError, invalid_request
from gateway.schemas.batch import FileDeleted, FileList, FileObject
from gateway.services.deps import ServicesDep

router = APIRouter()

PURPOSES = ("batch",)  # what may be uploaded; a batch's own files are "batch_output"


def file_not_found(file_id: str, *, param: str | None = None) -> APIError:
    return APIError(404, f"No such File object: {file_id[:128]}", param=param, code="not_found")


def file_too_large(limit: int) -> APIError:
    return APIError(413, f"The file exceeds the limit of {limit} bytes.", param="file", code="file_too_large")


def storage_full(e: batch_files.StorageFull) -> APIError:
    # 413, not 429: OpenAI's SDKs retry a 429 (and 5xx) by themselves, but waiting frees no storage; a 413 reaches
    # the caller at once (openai.APIStatusError, status_code 413) with this message.
    return APIError(413, str(e), param="file", code="storage_quota_exceeded")


async def count_request(services, principal) -> None:
    """One request against the tenant's and the key's RPM (no tokens): uploads and batch creation are work
    the tenant asks for, limited like any other request."""
    await services.limiter.settle(await reserve_tokens(services, principal, 0), 0)


@router.post("/files", response_model=FileObject)
async def upload_file(principal: TenantDep, services: ServicesDep, request: Request) -> FileObject:
    """Upload a JSONL file of batch requests (counted against your RPM; a few at a time per tenant)."""
    await count_request(services, principal)
    try:
        with services.uploads.hold(principal.tenant_id):
            return await _upload(principal, services, request)
    except TooManyUploads as e:
        raise APIError(429, str(e), type="rate_limit_error", code="too_many_concurrent_uploads",
                       headers={"Retry-After": "1"}) from None


async def _upload(principal, services, request: Request) -> FileObject:
    limit = services.settings.files_max_bytes
    form = await asyncio.to_thread(parse_form, request.headers.get("content-type", ""), await request.body())
    purpose, upload = form.get("purpose"), form.get("file")
    if purpose is None:
        raise invalid_request("purpose: a purpose is required.", param="purpose", code="missing_required_parameter")
    if purpose.text() not in PURPOSES:
        raise invalid_request(f"purpose: only {', '.join(PURPOSES)!r} is supported here.", param="purpose")
    if upload is None or upload.filename is None:
        raise invalid_request("file: a file is required.", param="file", code="missing_required_parameter")
    if len(upload.data) > limit:
        raise file_too_large(limit)
    now = utcnow()
    try:
        expiry = expires_at(*(_text(form.get(f"expires_after[{k}]")) for k in ("anchor", "seconds")), created_at=now)
    except InvalidExpiry as e:
        raise invalid_request(str(e), param=e.param) from None
    try:
        await asyncio.to_thread(check_jsonl, upload.data, max_lines=services.settings.batch_max_requests)
    except InvalidInput as e:
        raise invalid_request(f"file: {e}", param="file", code=e.errors[0].code) from None
    try:
        row = await BatchStore(services.database).run(
            batch_files.create_file, tenant_id=principal.tenant_id, file_id=new_file_id(),
            filename=_filename(upload.filename), purpose=purpose.text(), content=upload.data, created_at=now,
            expires_at=expiry, quota=services.settings.files_max_bytes_per_tenant)
    except batch_files.StorageFull as e:
        raise storage_full(e) from None
    return file_object(row)


def _text(part) -> str | None:
    return None if part is None else part.text()


def _filename(name: str | None) -> str:
    """Printable characters only (PostgreSQL refuses a NUL in text), at most 256 of them."""
    return "".join(c for c in name or "" if c.isprintable())[:256] or "upload.jsonl"


@router.get("/files", response_model=FileList)
async def list_files(principal: TenantDep, services: ServicesDep, purpose: str | None = None,
                     limit: Annotated[int, Query(ge=1, le=10_000)] = 10_000, after: str | None = None) -> FileList:
    """Your files, newest first."""
    rows = await BatchStore(services.database).run(batch_files.list_files, tenant_id=principal.tenant_id,
                                                   purpose=purpose, limit=limit + 1, after=after)
    data = [file_object(r) for r in rows[:limit]]
    return FileList(data=data, has_more=len(rows) > limit, first_id=data[0].id if data else None,
                    last_id=data[-1].id if data else None)


async def _file(services, principal, file_id: str):
    row = None
    if FILE_ID.fullmatch(file_id):
        row = await BatchStore(services.database).run(batch_files.get_file, tenant_id=principal.tenant_id,
                                                      file_id=file_id)
    if row is None:
        raise file_not_found(file_id)
    return row


@router.get("/files/{file_id}", response_model=FileObject)
async def retrieve_file(file_id: str, principal: TenantDep, services: ServicesDep) -> FileObject:
    """One of your files."""
    return file_object(await _file(services, principal, file_id))


@router.get("/files/{file_id}/content")
async def file_content(file_id: str, principal: TenantDep, services: ServicesDep) -> Response:
    """A file's bytes, as uploaded or as the batch wrote them."""
    content = None
    if FILE_ID.fullmatch(file_id):
        content = await BatchStore(services.database).run(batch_files.file_content, tenant_id=principal.tenant_id,
                                                          file_id=file_id)
    if content is None:
        raise file_not_found(file_id)
    return Response(content, media_type="application/jsonl")


@router.delete("/files/{file_id}", response_model=FileDeleted)
async def delete_file(file_id: str, principal: TenantDep, services: ServicesDep) -> FileDeleted:
    """Delete one of your files."""
    await _file(services, principal, file_id)
    await BatchStore(services.database).run(batch_files.delete_file, tenant_id=principal.tenant_id, file_id=file_id)
    return FileDeleted(id=file_id)
