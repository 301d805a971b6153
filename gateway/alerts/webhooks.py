"""Webhook rows as the admin routes use them: keyword-only, the caller's session, commits with its audit row."""
from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from gateway.db.models.webhook import Webhook
from gateway.db.models.webhook_delivery import WebhookDelivery
from gateway.security.secret_box import SecretBox


def secret_hint(secret: str) -> str:
    return "…" + secret[-4:]


def public_view(webhook: Webhook) -> dict[str, Any]:
    """What the API returns and the audit log records: never the secret, only its hint."""
    return {"id": webhook.id, "url": webhook.url, "events": list(webhook.events),
            "thresholds": dict(webhook.thresholds or {}), "secret_hint": webhook.secret_hint,
            "created_at": webhook.created_at}


def create_webhook(session: Session, *, url: str, events: list[str], secret: str, thresholds: dict[str, float],
                   box: SecretBox) -> Webhook:
    """Added and flushed, not committed: the caller commits it with its audit row. The secret is stored sealed."""
    webhook = Webhook(id=f"wh_{uuid.uuid4().hex}", url=url, events=events, secret=box.seal(secret),
                      secret_sealed=True, secret_hint=secret_hint(secret), thresholds=thresholds)
    session.add(webhook)
    session.flush()
    return webhook


def list_webhooks(session: Session) -> list[Webhook]:
    return list(session.scalars(select(Webhook).order_by(Webhook.created_at, Webhook.id)))


def get_webhook(session: Session, *, webhook_id: str) -> Webhook | None:
    return session.get(Webhook, webhook_id)


def list_deliveries(session: Session, *, webhook_id: str, status: str | None = None,
                    limit: int = 100) -> list[WebhookDelivery]:
    """Newest first."""
    query = (select(WebhookDelivery).where(WebhookDelivery.webhook_id == webhook_id)
             .order_by(WebhookDelivery.created_at.desc(), WebhookDelivery.id).limit(limit))
    if status is not None:
        query = query.where(WebhookDelivery.status == status)
    return list(session.scalars(query))
