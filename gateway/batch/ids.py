"""Ids in OpenAI's spellings; a line's request id is derived, never drawn, so a resumed line bills once."""
from __future__ import annotations

import hashlib
import re
import secrets

FILE_ID = re.compile(r"file-[0-9a-f]{24}")
BATCH_ID = re.compile(r"batch_[0-9a-f]{24}")


def new_file_id() -> str:
    return f"file-{secrets.token_hex(12)}"


def new_batch_id() -> str:
    return f"batch_{secrets.token_hex(12)}"


def line_request_id(batch_id: str, line: int) -> str:
    """The ledger's idempotency key for line `line` of the batch: the same on every attempt and every replica,
    so a line run again after a restart is never billed twice."""
    return f"req_{hashlib.sha256(f'{batch_id}:{line}'.encode()).hexdigest()[:32]}"


def line_output_id(batch_id: str, line: int) -> str:
    return f"batch_req_{hashlib.sha256(f'out:{batch_id}:{line}'.encode()).hexdigest()[:24]}"
