"""The outbox: alert events become webhook_deliveries rows (in the caller's transaction), which the delivery
workers claim under a lease, send, and settle. Every function takes a Connection (a Session gives its own with
`session.connection()`), so an event is written in the same transaction as the fact that caused it."""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Connection, delete, select

from gateway.crud import leases
from gateway.db.models.webhook import Webhook
from gateway.db.models.webhook_delivery import WebhookDelivery
from gateway.db.types import utcnow
from gateway.domain.alert_events import PING, AlertEvent, subscribes


def new_delivery_id() -> str:
    return f"evt_{uuid.uuid4().hex}"


def event_body(delivery_id: str, event: AlertEvent, created: datetime) -> str:
    """The JSON receivers get; fixed here so every retry sends (and signs) the same bytes."""
    return json.dumps({"id": delivery_id, "type": event.type, "created": int(created.timestamp()),
                       "data": event.data}, separators=(",", ":"), sort_keys=True, default=str)


def emit(conn: Connection, event: AlertEvent, *, only: str | None = None, now: datetime | None = None) -> list[str]:
    """A pending delivery for each webhook subscribed to `event`; with `only`, for that webhook alone (an SLO
    alert under its own thresholds; a test ping, which goes whatever it subscribes to). Returns the delivery ids;
    nothing is sent until the transaction commits."""
    now = now or utcnow()
    query = select(Webhook.id, Webhook.events)
    if only is not None:
        query = query.where(Webhook.id == only)
    rows = []
    for webhook_id, events in conn.execute(query):
        if event.type != PING and not subscribes(list(events or []), event.type):
            continue
        delivery_id = new_delivery_id()
        rows.append({"id": delivery_id, "webhook_id": webhook_id, "event_type": event.type,
                     "body": event_body(delivery_id, event, now), "status": "pending", "attempts": 0,
                     "next_attempt_at": now, "created_at": now})
    if rows:
        conn.execute(WebhookDelivery.__table__.insert(), rows)
    return [r["id"] for r in rows]


@dataclass(frozen=True, slots=True)
class Claimed:
    id: str
    webhook_id: str
    event_type: str
    url: str
    secret: str = field(repr=False)  # as stored: sealed, unless secret_sealed is False (sealing.signing_secret)
    secret_sealed: bool = field(repr=False)
    body: str
    attempts: int  # made before this one


def claim(conn: Connection, *, owner: str, now: datetime, lease_s: float, limit: int) -> list[Claimed]:
    """Up to `limit` due deliveries no live lease holds, now leased to `owner` (oldest due first). Each claim is
    a conditional update: of two workers racing for a row, exactly one update matches it."""
    due = [WebhookDelivery.status == "pending", WebhookDelivery.next_attempt_at <= now]
    won = leases.claim(conn, WebhookDelivery, where=due, order_by=[WebhookDelivery.next_attempt_at, WebhookDelivery.id],
                       owner=owner, now=now, lease_s=lease_s, limit=limit)
    if not won:
        return []
    rows = conn.execute(select(WebhookDelivery.id, WebhookDelivery.webhook_id, WebhookDelivery.event_type,
                               Webhook.url, Webhook.secret, Webhook.secret_sealed,
                               WebhookDelivery.body, WebhookDelivery.attempts)
                        .join(Webhook, Webhook.id == WebhookDelivery.webhook_id)
                        .where(WebhookDelivery.id.in_(won)).order_by(WebhookDelivery.next_attempt_at))
    return [Claimed(*row) for row in rows]


@dataclass(frozen=True, slots=True)
class Outcome:
    ok: bool
    status_code: int | None = None
    error: str | None = None


def settle(conn: Connection, *, delivery_id: str, owner: str, outcome: Outcome, now: datetime,
           retry_at: datetime | None) -> bool:
    """Record one attempt of a delivery `owner` holds: delivered; pending again from `retry_at`; or, with
    `retry_at` None after a failure, failed for good. False when the lease was lost meanwhile."""
    values: dict = {"attempts": WebhookDelivery.attempts + 1, "last_status_code": outcome.status_code}
    if outcome.ok:
        values |= {"status": "delivered", "delivered_at": now, "next_attempt_at": None, "last_error": None}
    elif retry_at is not None:
        values |= {"status": "pending", "next_attempt_at": retry_at, "last_error": outcome.error}
    else:
        values |= {"status": "failed", "next_attempt_at": None, "last_error": outcome.error}
    return leases.release(conn, WebhookDelivery, row_id=delivery_id, owner=owner, **values)


def prune(conn: Connection, *, before: datetime, limit: int = 1000) -> int:
    """Delete up to `limit` settled (delivered or failed) deliveries created before `before`; pending ones stay
    whatever their age. Returns how many went."""
    old = list(conn.scalars(select(WebhookDelivery.id).where(
        WebhookDelivery.status.in_(("delivered", "failed")), WebhookDelivery.created_at < before).limit(limit)))
    if old:
        conn.execute(delete(WebhookDelivery).where(WebhookDelivery.id.in_(old)))
    return len(old)
