"""Which prompt version serves a request. The label is read from the database on every request (one
primary-key lookup): a move is served by every replica from its next request on, never a stale version.
Versions are immutable, so they alone are cached in process."""
from __future__ import annotations

import asyncio
from collections import OrderedDict

from sqlalchemy.orm import Session

from gateway.db.database import Database
from gateway.prompts import store
from gateway.prompts.errors import PromptNotFound
from gateway.prompts.labels import choose
from gateway.prompts.types import PromptRef, PromptVersion

DEFAULT_LABEL = "production"  # served when a request names neither a label nor a version


class PromptService:
    def __init__(self, database: Database, *, max_cached_versions: int = 1024) -> None:
        if max_cached_versions < 1:
            raise ValueError(f"max_cached_versions must be >= 1, got {max_cached_versions}")
        self._database = database
        self._versions: OrderedDict[tuple[str, int], PromptVersion] = OrderedDict()
        self._max = max_cached_versions

    async def resolve(self, ref: PromptRef, *, key: str, tenant_id: str) -> PromptVersion:
        """The version `ref` names for caller `key` (user or request id: a weighted label is sticky per key),
        as tenant `tenant_id` sees it."""
        return await asyncio.to_thread(self.resolve_now, ref, key=key, tenant_id=tenant_id)

    def resolve_now(self, ref: PromptRef, *, key: str, tenant_id: str) -> PromptVersion:
        """Another tenant's prompt is answered exactly as a missing one, before anything else is looked up:
        its labels, versions and variables stay unknown to the caller."""
        with self._database.session() as session:
            if not store.visible_to(session, name=ref.name, tenant_id=tenant_id):
                raise PromptNotFound(f"No prompt named {ref.name!r}.", param="prompt.id")
            return self._version(session, ref.name, self._pick(session, ref, key))

    def _pick(self, session: Session, ref: PromptRef, key: str) -> int:
        if ref.version is not None:
            return ref.version
        label = ref.label or DEFAULT_LABEL
        weights = store.label_weights(session, name=ref.name, label=label)
        if weights is not None:
            return choose(ref.name, label, weights, key)
        if ref.label is not None:
            if not store.exists(session, name=ref.name):
                raise PromptNotFound(f"No prompt named {ref.name!r}.", param="prompt.id")
            raise PromptNotFound(f"Prompt {ref.name!r} has no label {ref.label!r}.", param="prompt.label")
        return store.latest_version(session, name=ref.name)  # no production label yet: the newest

    def _version(self, session: Session, name: str, version: int) -> PromptVersion:
        cached = self._versions.get((name, version))
        if cached is not None:
            self._versions.move_to_end((name, version))
            return cached
        try:
            found = store.get_version(session, name=name, version=version)
        except PromptNotFound as e:
            if e.param == "name":  # the prompt itself is missing: the request field is prompt.id
                raise PromptNotFound(e.message, param="prompt.id") from None
            raise
        self._versions[(name, version)] = found
        if len(self._versions) > self._max:
            self._versions.popitem(last=False)
        return found
