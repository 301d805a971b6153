"""The batch tables as the runner and the routes use them: each call one session, off the event loop."""
from __future__ import annotations

import asyncio
from datetime import timedelta

from gateway.crud import batch_files, batches
from gateway.db.database import Database
from gateway.db.models.batch import Batch
from gateway.db.models.batch_file import BatchFile
from gateway.db.types import utcnow
from gateway.domain.batch_usage import LineUsage


class BatchStore:
    def __init__(self, database: Database) -> None:
        self.database = database

    async def run(self, crud, **kw):
        """`crud(session, **kw)` in a worker thread."""
        return await asyncio.to_thread(self._call, crud, **kw)

    def _call(self, crud, **kw):
        with self.database.session() as session:
            return crud(session, **kw)

    # --- the runner's calls, named for what they mean

    async def claim(self, owner: str, lease_s: float, limit: int, skip) -> list[str]:
        return await self.run(batches.claim, owner=owner, now=utcnow(), lease_s=lease_s, limit=limit, skip=skip)

    async def renew(self, batch_id: str, owner: str, lease_s: float) -> bool:
        return await self.run(batches.renew, batch_id=batch_id, owner=owner,
                              until=utcnow() + timedelta(seconds=lease_s))

    async def release(self, batch_id: str, owner: str) -> None:
        await self.run(batches.release, batch_id=batch_id, owner=owner)

    async def held(self, batch_id: str, owner: str) -> Batch | None:
        return await self.run(batches.held_batch, batch_id=batch_id, owner=owner)

    async def move(self, batch_id: str, owner: str, to: str, **values) -> bool:
        return await self.run(batches.move, batch_id=batch_id, owner=owner, to=to, now=utcnow(), **values)

    async def status(self, batch_id: str) -> str | None:
        return await self.run(batches.status_of, batch_id=batch_id)

    async def input_content(self, batch: Batch) -> bytes | None:
        return await self.run(batch_files.file_content, tenant_id=batch.tenant_id, file_id=batch.input_file_id)

    async def input_expired_at(self, batch: Batch):
        """When the batch's input file expired (its row not yet swept), or None."""
        return await self.run(batch_files.expired_at, tenant_id=batch.tenant_id, file_id=batch.input_file_id)

    async def sweep_files(self, limit: int = 500) -> int:
        return await self.run(batch_files.delete_expired, now=utcnow(), limit=limit)

    async def done_lines(self, batch_id: str) -> set[int]:
        return await self.run(batches.done_lines, batch_id=batch_id)

    async def record_line(self, batch_id: str, line: int, ok: bool, output: bytes, *, request_id: str | None = None,
                          answered: LineUsage | None = None) -> bool:
        return await self.run(batches.record_line, batch_id=batch_id, line=line, ok=ok, output=output, now=utcnow(),
                              request_id=request_id, answered=answered)

    async def output_bytes(self, batch_id: str) -> int:
        return await self.run(batches.output_bytes, batch_id=batch_id)

    async def quota_room(self, batch: Batch, quota: int) -> int:
        return await self.run(batch_files.quota_room, tenant_id=batch.tenant_id, quota=quota)

    async def note_errors(self, batch_id: str, errors: bytes) -> None:
        await self.run(batches.note_errors, batch_id=batch_id, errors=errors)

    async def file_of_lines(self, batch_id: str, *, ok: bool) -> bytearray:
        return await self.run(batches.file_of_lines, batch_id=batch_id, ok=ok)

    async def finished_lines(self, batch_id: str):
        return await self.run(batches.finished_lines, batch_id=batch_id)

    async def finalize(self, batch: Batch, owner: str, to: str, output_file: BatchFile | None,
                       error_file: BatchFile | None) -> bool:
        return await self.run(batches.finalize, batch=batch, owner=owner, to=to, now=utcnow(),
                              output_file=output_file, error_file=error_file)
