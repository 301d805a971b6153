"""Admin: MaaS economics (revenue against serving cost) and the replica-hour prices it is computed with."""
from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, Response

from gateway.api.admin.auditing import AuditorDep
from gateway.api.periods import MonthDep
from gateway.catalogue import HardwareCost
from gateway.crud.version_costs import cost_in_effect, list_version_costs, set_version_cost
from gateway.db.models.version_cost import VersionCost
from gateway.db.types import utcnow
from gateway.domain.errors import invalid_request, not_found
from gateway.domain.period import Month
from gateway.economics.csv_export import economics_csv
from gateway.economics.monthly import OptionError, month_report, report_options
from gateway.schemas.economics import EconomicsReport, VersionCostList, VersionCostOut, VersionCostSet
from gateway.services.deps import ServicesDep, SessionDep

router = APIRouter()


def _current_ids(rows: list[VersionCost]) -> set[int]:
    """The row in effect now for each version (rows come sorted by version, effective_from)."""
    now, current = utcnow(), {}
    for r in rows:
        if r.effective_from <= now:
            current[r.version] = r.id
    return set(current.values())


def _out(row: VersionCost, current: set[int]) -> VersionCostOut:
    return VersionCostOut.model_validate(row).model_copy(update={"current": row.id in current})


@router.get("/versions/costs", response_model=VersionCostList)
def list_costs(session: SessionDep) -> VersionCostList:
    """Every replica-hour price, oldest first per version; `current` marks the one in effect."""
    rows = list_version_costs(session)
    current = _current_ids(rows)
    return VersionCostList(data=[_out(r, current) for r in rows])


@router.put("/versions/{version}/cost", response_model=VersionCostOut)
def put_cost(version: str, body: VersionCostSet, session: SessionDep, services: ServicesDep,
             auditor: AuditorDep) -> VersionCostOut:
    """Set a version's replica-hour price from `effective_from` (default: now); earlier minutes keep theirs."""
    if version not in services.catalogue.version_names():
        raise not_found(f"No version `{version}` in the catalogue.")
    rows = list_version_costs(session)
    hardware = body.hardware
    if hardware is None:  # keep what the version runs on
        mine = [r for r in rows if r.version == version]
        spec = services.catalogue.version(version)[2].cost
        # An upstream version's catalogue cost is per token (TokenCost): no hardware to keep.
        hardware = mine[-1].hardware if mine else (spec.hardware if isinstance(spec, HardwareCost) else "")
    when = body.effective_from or utcnow()  # in UTC (VersionCostSet)
    # The audit's before: what a replica-hour cost from `when` until now (the row overwritten, or the one before).
    audit = auditor.on_write("version_cost.set", before=cost_in_effect(session, version=version, at=when))
    row = set_version_cost(session, version=version, per_replica_hour=body.per_replica_hour, hardware=hardware,
                           effective_from=when, set_by=auditor.actor, audit=audit)
    return _out(row, _current_ids(list_version_costs(session)))


def _report(month: Month, services, session, utilisation: str | None, throughput: str | None,
            party: str = "tenant") -> EconomicsReport:
    try:
        options = report_options(services.settings.currency, utilisation, throughput)
    except OptionError as e:
        raise invalid_request(str(e), param=e.param) from None
    return month_report(session, services.catalogue, month, options, party=party)


def _by_prompt_version(report: EconomicsReport, tenants: EconomicsReport) -> JSONResponse:
    """The report, plus `prompt_versions`: the tenants section of a report whose parties are prompt versions."""
    body = report.model_dump(mode="json")
    body["group_by"] = "prompt_version"
    body["prompt_versions"] = [{"prompt_version": t.pop("tenant_id") or None, **t}
                               for t in tenants.model_dump(mode="json")["tenants"]]
    return JSONResponse(body)


Utilisation = Annotated[str | None, Query(description="what break-even prices assume, in (0, 1]; default 0.6")]
Throughput = Annotated[str | None, Query(description="output tokens per busy second per replica; default: measured")]


@router.get("/economics", response_model=EconomicsReport)
def economics(month: MonthDep, session: SessionDep, services: ServicesDep, utilisation: Utilisation = None,
              throughput: Throughput = None, format: str = "json", group_by: Literal["prompt_version"] | None = None):
    """A month's revenue, serving cost and margin per model, version and tenant; `format=csv` for CSV;
    `group_by=prompt_version` adds the same per stored prompt version (JSON only)."""
    if format not in ("json", "csv"):
        raise invalid_request(f"format must be json or csv, got {format!r}", param="format")
    if group_by is not None and format == "csv":
        raise invalid_request("group_by is for the JSON report", param="group_by")
    report = _report(month, services, session, utilisation, throughput)
    if format == "csv":
        return _csv(report, month)
    if group_by == "prompt_version":
        return _by_prompt_version(report, _report(month, services, session, utilisation, throughput,
                                                  party="prompt_version"))
    return report


@router.get("/economics.csv", response_class=Response)
def economics_csv_route(month: MonthDep, session: SessionDep, services: ServicesDep,
                        utilisation: Utilisation = None, throughput: Throughput = None) -> Response:
    """The month's economics report as CSV (one row per version, model, tenant, and the totals)."""
    return _csv(_report(month, services, session, utilisation, throughput), month)


def _csv(report: EconomicsReport, month: Month) -> Response:
    return Response(economics_csv(report), media_type="text/csv",
                    headers={"Content-Disposition": f'attachment; filename="economics-{month}.csv"'})
