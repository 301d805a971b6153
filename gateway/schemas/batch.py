"""The Files and Batch API objects, in OpenAI's shapes."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from gateway.domain.batch_state import WINDOWS_S

BATCH_ENDPOINTS = ("/v1/chat/completions", "/v1/completions", "/v1/embeddings")


class FileObject(BaseModel):
    id: str
    object: Literal["file"] = "file"
    bytes: int
    created_at: int
    filename: str
    purpose: str  # "batch" | "batch_output"
    status: str = "processed"
    status_details: str | None = None
    expires_at: int | None = None


class FileList(BaseModel):
    object: Literal["list"] = "list"
    data: list[FileObject]
    has_more: bool = False
    first_id: str | None = None
    last_id: str | None = None


class FileDeleted(BaseModel):
    id: str
    object: Literal["file"] = "file"
    deleted: bool = True


class BatchCreateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    input_file_id: str = Field(max_length=64)
    endpoint: str
    completion_window: str
    metadata: dict[str, str] | None = None

    def problem(self) -> tuple[str, str] | None:
        """(param, message) for a value OpenAI refuses with a 400; None when the request is sound."""
        if self.endpoint not in BATCH_ENDPOINTS:
            return "endpoint", f"endpoint must be one of {', '.join(BATCH_ENDPOINTS)}."
        if self.completion_window not in WINDOWS_S:
            return "completion_window", f"completion_window must be one of {', '.join(WINDOWS_S)}."
        if self.metadata is not None and (len(self.metadata) > 16 or any(
                len(k) > 64 or len(v) > 512 for k, v in self.metadata.items())):
            return "metadata", "metadata holds at most 16 pairs, keys up to 64 characters, values up to 512."
        return None


class BatchError(BaseModel):
    code: str | None = None
    message: str | None = None
    param: str | None = None
    line: int | None = None


class BatchErrors(BaseModel):
    object: Literal["list"] = "list"
    data: list[BatchError]


class RequestCounts(BaseModel):
    total: int
    completed: int
    failed: int


class InputTokensDetails(BaseModel):
    cached_tokens: int = 0


class OutputTokensDetails(BaseModel):
    reasoning_tokens: int = 0


class BatchUsage(BaseModel):
    """What the ledger billed for the batch's lines so far."""
    input_tokens: int = 0
    input_tokens_details: InputTokensDetails = InputTokensDetails()
    output_tokens: int = 0
    output_tokens_details: OutputTokensDetails = OutputTokensDetails()
    total_tokens: int = 0


class BatchObject(BaseModel):
    id: str
    object: Literal["batch"] = "batch"
    endpoint: str
    errors: BatchErrors | None = None
    input_file_id: str
    completion_window: str
    status: str
    output_file_id: str | None = None
    error_file_id: str | None = None
    created_at: int
    in_progress_at: int | None = None
    expires_at: int | None = None
    finalizing_at: int | None = None
    completed_at: int | None = None
    failed_at: int | None = None
    expired_at: int | None = None
    cancelling_at: int | None = None
    cancelled_at: int | None = None
    request_counts: RequestCounts
    usage: BatchUsage | None = None
    metadata: dict[str, str] | None = None


class BatchList(BaseModel):
    object: Literal["list"] = "list"
    data: list[BatchObject]
    has_more: bool = False
    first_id: str | None = None
    last_id: str | None = None
