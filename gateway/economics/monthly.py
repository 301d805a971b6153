"""A month's economics report as the admin API and the console ask for it: the break-even options from their
text parameters, and the catalogue's provider prices for the upstream versions."""
from __future__ import annotations

from decimal import Decimal, InvalidOperation

from sqlalchemy.orm import Session

from gateway.catalogue import Catalogue
from gateway.domain.period import Month
from gateway.economics.costs import provider_prices
from gateway.economics.query import economics_report
from gateway.economics.report import DEFAULT_UTILISATION, ReportOptions
from gateway.schemas.economics import EconomicsReport

MAX_THROUGHPUT = Decimal(10**9)  # tokens per second: far beyond any replica, and Decimal arithmetic stays exact


class OptionError(ValueError):
    """A report parameter that is not a number or out of range; `param` names it."""

    def __init__(self, message: str, *, param: str) -> None:
        super().__init__(message)
        self.param = param


def _decimal(text: str | None, param: str) -> Decimal | None:
    if text is None:
        return None
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise OptionError(f"{param} must be a number, got {text!r}", param=param) from None
    if not value.is_finite():
        raise OptionError(f"{param} must be a finite number", param=param)
    return value


def report_options(currency: str, utilisation: str | None, throughput: str | None) -> ReportOptions:
    """`utilisation` in (0, 1] (default 0.6), `throughput` in (0, 10^9] output tokens per busy second (default:
    each version's measured one); raises OptionError."""
    u = _decimal(utilisation, "utilisation")
    if u is not None and not 0 < u <= 1:
        raise OptionError(f"utilisation must be in (0, 1], got {utilisation}", param="utilisation")
    t = _decimal(throughput, "throughput")
    if t is not None and not 0 < t <= MAX_THROUGHPUT:
        raise OptionError(f"throughput must be in (0, {MAX_THROUGHPUT}], got {throughput}", param="throughput")
    return ReportOptions(currency=currency, utilisation=DEFAULT_UTILISATION if u is None else u, throughput=t)


def month_report(session: Session, catalogue: Catalogue, month: Month, options: ReportOptions, *,
                 party: str = "tenant") -> EconomicsReport:
    """The month's report: pool versions at their replica-hour prices, upstream versions at the providers'."""
    return economics_report(session, period=month.period, month=str(month), options=options, party=party,
                            providers=provider_prices(catalogue))
