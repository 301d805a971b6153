"""Shared setup for the alerts tests: webhooks straight into the database, deliveries read back."""
from __future__ import annotations

from sqlalchemy import select

from gateway.alerts.webhooks import create_webhook
from gateway.db.models.webhook_delivery import WebhookDelivery
from gateway.security.secret_box import SecretBox

SECRET = "whsec-0123456789abcdef"
BOX = SecretBox("alerts-tests-secret-key")  # the gateway's SecretBox: seals webhook secrets, opens them to sign


def add_webhook(database, url: str, events: list[str] | None = None, **kw) -> str:
    with database.session() as session:
        webhook = create_webhook(session, url=url, events=events or ["*"], secret=kw.pop("secret", SECRET),
                                 thresholds=kw.pop("thresholds", {}), box=kw.pop("box", BOX))
        session.commit()
        return webhook.id


def deliveries(database, event_type: str | None = None) -> list[WebhookDelivery]:
    with database.session() as session:
        query = select(WebhookDelivery).order_by(WebhookDelivery.created_at, WebhookDelivery.id)
        if event_type is not None:
            query = query.where(WebhookDelivery.event_type == event_type)
        return list(session.scalars(query))
