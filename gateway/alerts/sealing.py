"""Webhook secrets at rest: sealed with the gateway's SecretBox when created, opened only to sign a delivery.

Rows from before 0017 (secret_sealed False) hold the plaintext; `seal_stored` seals them, and re-seals under the
current key what a previous key sealed (TOLLGATE_SECRET_KEY `new,old`). Each write is conditional on the value it
read, so any number of replicas may run it at once: one wins each row, and none ever writes a secret it did not
read."""
from __future__ import annotations

import logging

from sqlalchemy import Connection, select, update

from gateway.alerts.webhooks import secret_hint
from gateway.db.models.webhook import Webhook
from gateway.security.secret_box import SecretBox, SecretBoxError

log = logging.getLogger(__name__)


class SecretUnavailable(Exception):
    """A webhook's stored secret this gateway cannot open: its deliveries fail (classified), never unsigned."""


def signing_secret(stored: str, *, sealed: bool, box: SecretBox) -> str:
    if not sealed:
        return stored  # plaintext from before 0017, until the next seal_stored
    try:
        return box.open(stored)
    except SecretBoxError:
        raise SecretUnavailable("secret: sealed under another secret key (was TOLLGATE_SECRET_KEY changed?); "
                                "not sent unsigned") from None


def seal_stored(conn: Connection, box: SecretBox, *, reseal: bool = True) -> int:
    """Seal every plaintext webhook secret and, with `reseal` (start-up), re-seal under the current key those a
    previous key sealed. Returns how many rows changed."""
    query = select(Webhook.id, Webhook.secret, Webhook.secret_sealed)
    if not (reseal and box.rotating):
        query = query.where(Webhook.secret_sealed.is_(False))
    changed = 0
    for webhook_id, stored, sealed in conn.execute(query).all():
        values = {"secret_sealed": True}
        if not sealed:
            new = box.seal(stored)
            values["secret_hint"] = secret_hint(stored)
        else:
            try:
                new = box.resealed(stored)
            except SecretBoxError:
                log.warning("alerts: webhook %s's secret cannot be opened with any configured secret key; "
                            "its deliveries fail until it is re-created", webhook_id)
                continue
            if new is None:
                continue
        done = conn.execute(update(Webhook).where(Webhook.id == webhook_id, Webhook.secret == stored,
                                                  Webhook.secret_sealed.is_(sealed))
                            .values(secret=new, **values))
        changed += done.rowcount
    return changed
