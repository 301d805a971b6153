"""Table rows as the API's objects."""
from __future__ import annotations

import json
from datetime import datetime

from gateway.db.models.batch import Batch
from gateway.db.models.batch_file import BatchFile
from gateway.schemas.batch import (BatchErrors, BatchObject, BatchUsage, FileObject, InputTokensDetails,
                                  RequestCounts)


def _ts(value: datetime | None) -> int | None:
    return None if value is None else int(value.timestamp())


def file_object(row: BatchFile) -> FileObject:
    return FileObject(id=row.id, bytes=row.bytes, created_at=_ts(row.created_at), filename=row.filename,
                      purpose=row.purpose, expires_at=_ts(row.expires_at))


def batch_object(row: Batch) -> BatchObject:
    errors = None if row.errors is None else BatchErrors(data=json.loads(bytes(row.errors)))
    metadata = None if row.metadata_json is None else json.loads(bytes(row.metadata_json))
    return BatchObject(
        id=row.id, endpoint=row.endpoint, errors=errors, input_file_id=row.input_file_id,
        completion_window=row.completion_window, status=row.status, output_file_id=row.output_file_id,
        error_file_id=row.error_file_id, created_at=_ts(row.created_at), in_progress_at=_ts(row.in_progress_at),
        expires_at=_ts(row.expires_at), finalizing_at=_ts(row.finalizing_at), completed_at=_ts(row.completed_at),
        failed_at=_ts(row.failed_at), expired_at=_ts(row.expired_at), cancelling_at=_ts(row.cancelling_at),
        cancelled_at=_ts(row.cancelled_at),
        request_counts=RequestCounts(total=row.total, completed=row.completed, failed=row.failed),
        usage=usage_of(row), metadata=metadata)


def usage_of(row: Batch) -> BatchUsage:
    tokens_in, tokens_out = row.input_tokens or 0, row.output_tokens or 0
    cached = InputTokensDetails(cached_tokens=row.cached_tokens or 0)
    return BatchUsage(input_tokens=tokens_in, input_tokens_details=cached, output_tokens=tokens_out,
                      total_tokens=tokens_in + tokens_out)
