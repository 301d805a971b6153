"""A Router change, its RoutingError as the API's error; the admin API and the console both call it."""
from __future__ import annotations

from gateway.domain.errors import APIError, invalid_request, not_found
from gateway.routing.errors import RoutingError, UnknownModel


def _api_error(e: RoutingError) -> APIError:
    if isinstance(e, UnknownModel):
        return not_found(f"No route for `{e.model}`.")
    return invalid_request(str(e), param=e.param, code="invalid_route")


def apply_change(change, *args, **kwargs) -> dict:
    """Run a Router change, its RoutingError as the API's error."""
    try:
        return change(*args, **kwargs)
    except RoutingError as e:
        raise _api_error(e) from e
