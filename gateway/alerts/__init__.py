"""Alerts as signed webhooks: events (events), where they are detected (budget, canary, the ledger's spooling),
the outbox they are written to (outbox, marks), and the worker that signs and delivers them (worker, sender,
signing, backoff). `Alerts` (service) is what the gateway's Services builds."""
from gateway.alerts.config import AlertsConfig
from gateway.alerts.events import EVENT_TYPES, AlertEvent
from gateway.alerts.service import Alerts
from gateway.alerts.signing import signature, verify

__all__ = ["EVENT_TYPES", "AlertEvent", "Alerts", "AlertsConfig", "signature", "verify"]
