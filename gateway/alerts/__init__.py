"""Alerts as signed webhooks: events (events); where they are detected (budget after the ledger's inserts, canary
in the route store's transaction, the ledger's spooling, and the periodic monitor's health and slo checks); the
outbox they are written to (outbox, marks: once per crossing); and the worker that signs and delivers them
(worker, sender, signing), each webhook's secret sealed at rest (sealing). `Alerts` (service) is what
the gateway's Services builds."""
from gateway.alerts.config import AlertsConfig
from gateway.alerts.service import Alerts
from gateway.alerts.signing import signature, verify
from gateway.domain.alert_events import EVENT_TYPES, AlertEvent

__all__ = ["EVENT_TYPES", "AlertEvent", "Alerts", "AlertsConfig", "signature", "verify"]
