"""One tenant's stored responses, read and written off the event loop."""
from __future__ import annotations

import asyncio
import logging
import re
from datetime import UTC, datetime

from sqlalchemy.exc import SQLAlchemyError

from gateway.crud.responses import Stored, delete_response, get_response, save_response
from gateway.db.database import Database
from gateway.db.errors import database_unavailable
from gateway.schemas.responses import ResponseObject

log = logging.getLogger("tollgate.responses")

# Ours are "resp_" + a request id's 32 hex digits: anything else cannot be stored, so it is not looked up.
RESPONSE_ID = re.compile(r"resp_[0-9a-f]{32}")


class ResponseStore:
    def __init__(self, database: Database, tenant_id: str, *, cap: int) -> None:
        self.database, self.tenant_id, self.cap = database, tenant_id, cap

    async def get(self, response_id: str) -> Stored | None:
        if not RESPONSE_ID.fullmatch(response_id):
            return None
        return await asyncio.to_thread(self._run, get_response, response_id=response_id)

    async def delete(self, response_id: str) -> bool:
        if not RESPONSE_ID.fullmatch(response_id):
            return False
        return await asyncio.to_thread(self._run, delete_response, response_id=response_id)

    async def save(self, response: ResponseObject, context: list[dict[str, str]]) -> bool:
        """Keep `response` (evicting the tenant's oldest past the cap). Best effort: with the database
        unreachable the answer still goes out, already billed; it is only not there to read back or continue
        from, which is logged. A bad statement still raises."""
        body = response.model_dump(mode="json")
        created = datetime.now(UTC)  # to the microsecond: the order evictions go in
        try:
            evicted = await asyncio.to_thread(self._run, save_response, response_id=response.id, created_at=created,
                                              response=body, context=context, cap=self.cap)
        except SQLAlchemyError as e:
            if not database_unavailable(e):
                raise
            log.warning("response %s not stored, the database is unreachable (%s)", response.id, type(e).__name__)
            return False
        if evicted:
            log.info("stored responses evicted", extra={"evicted": evicted, "cap": self.cap})
        return True

    def _run(self, crud, **kw):
        with self.database.session() as session:
            return crud(session, tenant_id=self.tenant_id, **kw)
