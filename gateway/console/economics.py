"""Economics: per model, the month's revenue against the cost of its traffic as served (replica-hours for pool
versions, provider prices for upstream ones), and self-host vs API (GET /admin/economics' function)."""
from __future__ import annotations

from decimal import Decimal

from fastapi import APIRouter, Request
from fastapi.responses import Response

from gateway.console.forms import in_words
from gateway.console.render import error_page, render
from gateway.console.viewer import AdminViewerDep
from gateway.domain.errors import APIError
from gateway.economics.monthly import OptionError, month_report, report_options
from gateway.schemas.economics import Crossover, ModelEconomics
from gateway.services.deps import ServicesDep, SessionDep
from gateway.services.periods import parse_month

router = APIRouter()
BASES = {"replica_hours": "replica-hours", "provider_prices": "provider prices"}


def basis_of(model: ModelEconomics) -> str:
    """How the model's cost was reckoned, in words: by its served versions' bases."""
    bases = sorted({v.cost_basis for v in model.versions if v.version is not None})
    return " and ".join(BASES.get(b, b) for b in bases) or "nothing served by an engine"


def crossover_words(model: ModelEconomics, crossover: Crossover, utilisation: Decimal) -> str:
    """The crossover volume as a sentence, against the model's output tokens this month."""
    pool, api = crossover.pool_version, crossover.upstream_version
    at = f"at {utilisation * 100:.0f} % utilisation"
    volume = crossover.output_tokens_per_month
    if volume is None:
        priced = {a.version for a in model.what_if if a.cost is not None}
        if not {pool, api} <= priced:
            missing = pool if pool not in priced else api
            return (f"No crossover between the pool ({pool}) and the API ({api}) can be worked out: {missing} has no "
                    "price or measured throughput to go by.")
        return (f"The pool ({pool}) is never cheaper than the API ({api}) {at}: its cost per output token is "
                "higher, and more volume needs more replicas at that same cost per token.")
    now = model.completion_tokens
    verdict = "above it: the pool is the cheaper way to serve them" if now > volume else \
        "below it: at this volume the API costs less than keeping one replica up all month"
    return (f"The pool ({pool}) becomes cheaper than the API ({api}) above {volume:,.0f} output tokens a month "
            f"{at}; this month's {now:,} output tokens are {verdict}.")


@router.get("/economics")
def economics(request: Request, viewer: AdminViewerDep, session: SessionDep, services: ServicesDep,
              month: str | None = None, utilisation: str | None = None) -> Response:
    """Per model: revenue, cost as served and its basis, margin, the what-if per version, the crossovers."""
    try:
        chosen = parse_month(month or None)
        options = report_options(services.settings.currency, utilisation or None, None)
    except APIError as e:
        return error_page(request, viewer, e.status, in_words(e))
    except OptionError as e:
        return error_page(request, viewer, 400, f"{e} (field: {e.param})")
    report = month_report(session, services.catalogue, chosen, options)
    return render(request, "economics.html", viewer, report=report, month=str(chosen), bases=BASES,
                  basis_of=basis_of, crossover_words=crossover_words, utilisation=utilisation or "")
