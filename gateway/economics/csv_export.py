"""The economics report as CSV: one row per version, per model, per tenant and the totals (`level` says which)."""
from __future__ import annotations

import csv
import io
from decimal import Decimal

from gateway.schemas.billing import decimal_text
from gateway.schemas.economics import EconomicsReport

CSV_COLUMNS = ("level", "model", "version", "tenant_id", "hardware", "per_replica_hour", "requests",
               "prompt_tokens", "completion_tokens", "revenue", "replica_hours", "engine_hours", "serving_cost",
               "attributed_cost", "idle_cost", "cost", "utilisation", "cost_per_million_output_tokens", "margin",
               "margin_ratio", "throughput", "break_even_per_million_output_tokens", "currency")


def _cell(value) -> str:
    if value is None:
        return ""
    return decimal_text(value) if isinstance(value, Decimal) else str(value)


def economics_csv(report: EconomicsReport) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, CSV_COLUMNS, restval="", extrasaction="ignore")
    writer.writeheader()

    def row(level: str, fields: dict) -> None:
        writer.writerow({k: _cell(v) for k, v in {**fields, "level": level, "currency": report.currency}.items()})

    for m in report.models:
        for v in m.versions:
            row("version", {"model": m.model, **dict(v)})
        row("model", {k: v for k, v in dict(m).items() if k != "versions"})
    for t in report.tenants:
        row("tenant", dict(t))
    row("total", dict(report.totals))
    return buf.getvalue()
