"""Live changes to upstreams (PUT /admin/upstreams/{name}): stored in the database (the key sealed with the
SecretBox), applied to this replica's backend at once and to the others through the event bus (UpstreamChanged),
and at start-up. Applying one resets the upstream's health and circuit state."""
from __future__ import annotations

import asyncio
import logging

from gateway.audit.auditor import Auditor
from gateway.audit.record import Target
from gateway.crud.upstreams import get_override, list_overrides, set_override
from gateway.db.database import Database
from gateway.db.models.upstream_override import UpstreamOverride
from gateway.security.secret_box import SecretBox, SecretBoxError
from gateway.upstreams.backend import UpstreamBackend
from gateway.upstreams.config import UpstreamConfig

log = logging.getLogger("tollgate.upstreams")


class LiveUpstreams:
    def __init__(self, database: Database, backend: UpstreamBackend, box: SecretBox) -> None:
        self.database, self.backend, self._box = database, backend, box

    def names(self) -> list[str]:
        return list(self.backend.upstreams)

    async def load_all(self) -> None:
        """Every stored override onto the catalogue's upstreams (start-up, and a resync)."""
        rows = {row.name: row for row in await asyncio.to_thread(self._read_all)}
        for name in self.backend.upstreams:
            await self._apply(name, rows.get(name))

    async def reload(self, name: str) -> None:
        """One upstream from the database (another replica changed it)."""
        if name in self.backend.upstreams:
            await self._apply(name, await asyncio.to_thread(self._read, name))

    def update(self, name: str, *, base_url: str | None, api_key: str | None, timeout_s: float | None,
               auditor: Auditor) -> None:
        """Store the change and its audit row in one transaction (in a worker thread). The audit row says that a
        key was set, never the key."""
        with self.database.session() as session:
            before = _described(get_override(session, name=name))
            row = set_override(session, name=name, updated_by=auditor.actor, base_url=base_url,
                               api_key_sealed=self._box.seal(api_key) if api_key is not None else None,
                               timeout_s=timeout_s,
                               audit=lambda s, r: auditor.record(s, "upstream.update", Target("upstream", name),
                                                                 before=before, after=_described(r)))
            del row

    async def _apply(self, name: str, row: UpstreamOverride | None) -> None:
        config = self.backend.catalogue_config(name)
        if row is not None:
            config = self._overridden(config, row)
        await self.backend.configure(config)

    def _overridden(self, config: UpstreamConfig, row: UpstreamOverride) -> UpstreamConfig:
        key = None
        if row.api_key_encrypted:
            try:
                key = self._box.open(row.api_key_encrypted)
            except SecretBoxError:
                log.error("upstream key cannot be decrypted (another TOLLGATE_SECRET_KEY?); keeping the catalogue's",
                          extra={"upstream": row.name})
        return config.overridden(base_url=row.base_url, api_key=key, timeout_s=row.timeout_s)

    def _read(self, name: str) -> UpstreamOverride | None:
        with self.database.session() as session:
            row = get_override(session, name=name)
            if row is not None:
                session.expunge(row)
            return row

    def _read_all(self) -> list[UpstreamOverride]:
        with self.database.session() as session:
            rows = list_overrides(session)
            for row in rows:
                session.expunge(row)
            return rows

    def status(self) -> list[dict]:
        return [up.status() for up in self.backend.upstreams.values()]


def _described(row: UpstreamOverride | None) -> dict | None:
    """An override as the audit log keeps it: whether a key is set, never the key (nor its sealed form)."""
    if row is None:
        return None
    return {"base_url": row.base_url, "timeout_s": row.timeout_s, "api_key_set": bool(row.api_key_encrypted)}
