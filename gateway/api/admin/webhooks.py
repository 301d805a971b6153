"""Admin: webhooks that receive alerts, and their deliveries."""
from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query

from gateway.domain.alert_events import PING, AlertEvent
from gateway.alerts.outbox import emit
from gateway.alerts.targets import TargetPolicy, UnsafeTarget
from gateway.alerts.webhooks import (create_webhook, get_webhook, list_deliveries, list_webhooks,
                                     public_view)
from gateway.api.admin.auditing import AuditorDep
from gateway.services.deps import ServicesDep, SessionDep
from gateway.domain.errors import invalid_request, not_found
from gateway.audit.chain import jsonable
from gateway.audit.record import Target
from gateway.db.models.webhook import Webhook
from gateway.db.models.webhook_delivery import WebhookDelivery
from gateway.schemas.webhooks import (DeliveryList, DeliveryOut, WebhookCreate, WebhookDeleted, WebhookList,
                                      WebhookOut)

router = APIRouter()

# Ids are "wh_" and 32 hex digits; anything else is simply not found (no NUL reaches PostgreSQL).
WebhookId = Annotated[str, Path(max_length=64, pattern=r"^[^\x00-\x1f\x7f]+$")]


def _audited(webhook: Webhook) -> dict:
    return {k: jsonable(v) for k, v in public_view(webhook).items()}


def _webhook_or_404(session, webhook_id: str) -> Webhook:
    webhook = get_webhook(session, webhook_id=webhook_id)
    if webhook is None:
        raise not_found(f"No webhook with id {webhook_id!r}.")
    return webhook


@router.post("/webhooks", status_code=201, response_model=WebhookOut)
def create(body: WebhookCreate, session: SessionDep, auditor: AuditorDep, services: ServicesDep) -> WebhookOut:
    """Subscribe a URL to alert events; deliveries are signed with `secret` (stored encrypted, never shown
    again). A URL whose host is, or resolves to, a loopback, private, link-local or metadata address is refused
    (400) unless TOLLGATE_WEBHOOKS_ALLOW_PRIVATE is set; a name that does not resolve yet is checked at each
    delivery."""
    try:
        TargetPolicy(allow_private=services.settings.webhooks_allow_private).check_new(body.url)
    except UnsafeTarget as e:
        raise invalid_request(f"url: {e}", param="url") from None
    webhook = create_webhook(session, url=body.url, events=body.events, secret=body.secret,
                             thresholds=body.thresholds.model_dump(exclude_none=True), box=services.secret_box)
    auditor.record(session, "webhook.create", Target("webhook", webhook.id), after=_audited(webhook))
    session.commit()
    return WebhookOut.model_validate(public_view(webhook))


@router.get("/webhooks", response_model=WebhookList)
def list_all(session: SessionDep) -> WebhookList:
    """Every webhook, oldest first, secrets as hints."""
    return WebhookList(data=[WebhookOut.model_validate(public_view(w)) for w in list_webhooks(session)])


@router.get("/webhooks/{webhook_id}", response_model=WebhookOut)
def read(webhook_id: WebhookId, session: SessionDep) -> WebhookOut:
    """One webhook."""
    return WebhookOut.model_validate(public_view(_webhook_or_404(session, webhook_id)))


@router.delete("/webhooks/{webhook_id}", response_model=WebhookDeleted)
def delete(webhook_id: WebhookId, session: SessionDep, auditor: AuditorDep) -> WebhookDeleted:
    """Remove a webhook and its deliveries (pending ones are never sent)."""
    webhook = _webhook_or_404(session, webhook_id)
    before = _audited(webhook)
    session.delete(webhook)
    session.flush()
    auditor.record(session, "webhook.delete", Target("webhook", webhook_id), before=before)
    session.commit()
    return WebhookDeleted(id=webhook_id)


@router.get("/webhooks/{webhook_id}/deliveries", response_model=DeliveryList)
def deliveries(webhook_id: WebhookId, session: SessionDep,
               status: Annotated[Literal["pending", "delivered", "failed"] | None, Query()] = None,
               limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> DeliveryList:
    """A webhook's deliveries, newest first: status, attempts, last error, next attempt."""
    _webhook_or_404(session, webhook_id)
    rows = list_deliveries(session, webhook_id=webhook_id, status=status, limit=limit)
    return DeliveryList(data=[DeliveryOut.model_validate(d) for d in rows])


@router.post("/webhooks/{webhook_id}/test", status_code=202, response_model=DeliveryOut)
def test(webhook_id: WebhookId, session: SessionDep, services: ServicesDep) -> DeliveryOut:
    """Queue a `ping` event to this webhook alone; its delivery shows how the receiver answered."""
    _webhook_or_404(session, webhook_id)
    (delivery_id,) = emit(session.connection(), AlertEvent(PING, {"webhook_id": webhook_id}), only=webhook_id)
    session.commit()
    alerts = getattr(services, "alerts", None)
    if alerts is not None and alerts.worker is not None:
        alerts.worker.wake()
    return DeliveryOut.model_validate(session.get(WebhookDelivery, delivery_id))
