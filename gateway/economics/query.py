"""The economics report's inputs, read from the ledger, the replica-minutes and the replica-hour prices."""
from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from gateway.crud.replica_minutes import recorded_versions, replica_minutes
from gateway.db.models.usage import Usage
from gateway.domain.period import Period
from gateway.economics.costs import CostHistory, ProviderPrice
from gateway.economics.report import ReplicaSlice, ReportOptions, UsageSlice, build_report
from gateway.schemas.economics import EconomicsReport


def _ledger_versions(session: Session, period: Period) -> list[str | None]:
    stmt = select(Usage.version).where(Usage.created_at >= period.start, Usage.created_at < period.end).distinct()
    return list(session.scalars(stmt))


# Who carries costs in the report's `tenants` section: tenants, or (group_by=prompt_version) the stored
# prompt version behind each request, "" for requests without one.
PARTIES = {"tenant": Usage.tenant_id, "prompt_version": func.coalesce(Usage.prompt_version, "")}


def usage_slices(session: Session, period: Period, history: CostHistory, *,
                 party: str = "tenant") -> list[UsageSlice]:
    """Per (party, model) sums of each version, cut where its replica-hour price changed."""
    who = PARTIES[party]
    out = []
    for version in _ledger_versions(session, period):
        spans = history.spans(version, period.start, period.end) if version else [(period.start, period.end, None)]
        for start, end, point in spans:
            stmt = (select(who, Usage.model, func.count(Usage.id),
                           func.coalesce(func.sum(Usage.prompt_tokens), 0),
                           func.coalesce(func.sum(Usage.completion_tokens), 0),
                           func.sum(Usage.cost), func.coalesce(func.sum(Usage.engine_ms), 0.0))
                    .where(Usage.created_at >= start, Usage.created_at < end,
                           Usage.version == version if version is not None else Usage.version.is_(None))
                    .group_by(who, Usage.model))
            out += [UsageSlice(tenant_id=t, model=m, version=version, requests=int(n), prompt_tokens=int(p),
                               completion_tokens=int(c), revenue=cost or Decimal(0), engine_ms=float(ms),
                               per_replica_hour=point.per_replica_hour if point is not None else None)
                    for t, m, n, p, c, cost, ms in session.execute(stmt)]
    return out


def replica_slices(session: Session, period: Period, history: CostHistory) -> list[ReplicaSlice]:
    out = []
    for version in recorded_versions(session, start=period.start, end=period.end):
        for start, end, point in history.spans(version, period.start, period.end):
            minutes = replica_minutes(session, version=version, start=start, end=end)
            if minutes:
                out.append(ReplicaSlice(version, minutes, point.per_replica_hour if point is not None else None))
    return out


def economics_report(session: Session, *, period: Period, month: str | None,
                     options: ReportOptions, party: str = "tenant",
                     providers: dict[str, ProviderPrice] | None = None) -> EconomicsReport:
    """With party="prompt_version", `tenants` lists prompt versions ("" for requests without one) carrying
    the costs their requests caused, apportioned exactly as tenants' are."""
    history = CostHistory.load(session)
    usage = usage_slices(session, period, history, party=party)
    replicas = replica_slices(session, period, history)
    versions = {s.version for s in usage if s.version} | {r.version for r in replicas}
    at = period.end - timedelta(microseconds=1)  # the last instant of the period
    current = {v: p for v in versions if (p := history.at(v, at)) is not None}
    return build_report(usage, replicas, current, period=period, month=month, options=options, providers=providers)
