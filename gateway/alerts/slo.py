"""slo.error_rate and slo.ttft_p99: each webhook's own thresholds against the ledger's last window.

The ledger is what every gateway writes, so one verdict covers the whole fleet (a gateway's own router metrics
would see only its share). Error rate: rows with status "error" over all rows (client mistakes are never
billed, so never counted); TTFT p99: nearest rank over rows that have one. Once per crossing: a mark per
(event, webhook) while the value is over its threshold; the first check back under removes it (re-armed)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Connection, case, func, select

from gateway.alerts.marks import mark_once, unmark
from gateway.alerts.outbox import emit
from gateway.db.models.usage import Usage
from gateway.db.models.webhook import Webhook
from gateway.domain.alert_events import SLO_ERROR_RATE, SLO_TTFT_P99, AlertEvent, subscribes

FIRING = "firing"


@dataclass(frozen=True, slots=True)
class WindowStats:
    requests: int
    errors: int
    ttft_p99_ms: float | None

    @property
    def error_rate(self) -> float:
        return self.errors / self.requests if self.requests else 0.0


def p99(values: list[float]) -> float | None:
    """Nearest rank: the smallest value with at least 99 % of the values at or below it."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(math.ceil(0.99 * len(ordered)) - 1, 0)]


def window_stats(conn: Connection, *, since: datetime, ttft: bool = True) -> WindowStats:
    """Counts in SQL; the TTFT values (a p99 needs them all) only when `ttft`."""
    requests, errors = conn.execute(select(func.count(), func.coalesce(func.sum(case((Usage.status == "error", 1),
                                                                                    else_=0)), 0))
                                    .where(Usage.created_at >= since)).one()
    values = list(conn.scalars(select(Usage.ttft_ms).where(Usage.created_at >= since, Usage.ttft_ms.is_not(None)))
                  ) if ttft else []
    return WindowStats(int(requests), int(errors), p99(values))


# event type -> (threshold key in a webhook's thresholds, the measured value)
_MEASURES = {SLO_ERROR_RATE: ("error_rate", lambda s: s.error_rate),
             SLO_TTFT_P99: ("ttft_p99_ms", lambda s: s.ttft_p99_ms)}


def check_slos(conn: Connection, *, now: datetime, window_s: float, min_requests: int) -> list[str]:
    """Emit what crossed, re-arm what recovered. Returns the delivery ids written."""
    hooks = [(wid, list(events or []), thresholds or {}) for wid, events, thresholds in
             conn.execute(select(Webhook.id, Webhook.events, Webhook.thresholds))]
    wanted = [(wid, event_type, thresholds[key]) for wid, events, thresholds in hooks
              for event_type, (key, _) in _MEASURES.items()
              if thresholds.get(key) is not None and subscribes(events, event_type)]
    if not wanted:
        return []
    stats = window_stats(conn, since=now - timedelta(seconds=window_s),
                         ttft=any(event_type == SLO_TTFT_P99 for _, event_type, _ in wanted))
    if stats.requests < min_requests:
        return []  # too little traffic for a verdict either way
    out: list[str] = []
    for webhook_id, event_type, threshold in wanted:
        key, measure = _MEASURES[event_type]
        value = measure(stats)
        if value is not None and value > threshold:
            if mark_once(conn, kind=event_type, subject=webhook_id, period=FIRING):
                out += emit(conn, AlertEvent(event_type, {
                    key: value, "threshold": threshold, "window_s": window_s, "requests": stats.requests}),
                    only=webhook_id, now=now)
        else:
            unmark(conn, kind=event_type, subject=webhook_id, period=FIRING)
    return out
