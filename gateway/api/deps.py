"""Dependencies shared by routes: the DB session, the calling tenant, the admin check.

Components come from `request.app.state.services` (built in gateway/services.py), which must
have: database, prices, ledger, settings, catalogue, authenticator (KeyAuthenticator), admin_key.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from gateway.api.errors import APIError, database_unavailable, invalid_api_key
from gateway.security.admin_key import admin_key_matches
from gateway.security.auth_throttle import retry_after_header
from gateway.security.authenticator import AuthUnavailable, InvalidKey
from gateway.security.principal import Principal, key_allows_model

__all__ = ["AdminDep", "AnyKeyTenantDep", "Principal", "ServicesDep", "SessionDep", "TenantDep", "authenticate",
           "authenticate_any_key", "key_allows_model", "require_admin"]

NO_KEY = ("You didn't provide an API key. You need to provide your API key in an Authorization "
          "header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).")


def get_services(request: Request) -> Any:
    return request.app.state.services


ServicesDep = Annotated[Any, Depends(get_services)]


def get_session(services: ServicesDep) -> Iterator[Session]:
    with services.database.session() as session:
        yield session


SessionDep = Annotated[Session, Depends(get_session)]


def bearer_token(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise invalid_api_key(NO_KEY)
    return token


def _client(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def _check_throttle(request: Request) -> None:
    """429 before any key lookup when this address keeps presenting bad keys."""
    throttle = getattr(request.app.state.services, "auth_throttle", None)
    wait = throttle.retry_after(_client(request)) if throttle is not None else None
    if wait is not None:
        raise APIError(429, "Too many requests with invalid credentials from this address; retry later.",
                       type="rate_limit_error", code="too_many_failed_authentications",
                       headers={"Retry-After": retry_after_header(wait)})


def _failed(request: Request) -> None:
    throttle = getattr(request.app.state.services, "auth_throttle", None)
    if throttle is not None:
        throttle.failed(_client(request))


async def authenticate(request: Request) -> Principal:
    """The tenant behind the Bearer key; 401 invalid_api_key otherwise, 503 database_unavailable
    when the database cannot be reached and the key is not one the cache still vouches for, 429 when
    this address has presented too many bad keys (checked before any lookup)."""
    _check_throttle(request)
    return await _tenant(request, bearer_token(request))


async def _tenant(request: Request, token: str) -> Principal:
    try:
        return await request.app.state.services.authenticator.authenticate(token)
    except InvalidKey as e:
        _failed(request)
        raise invalid_api_key(str(e)) from e
    except AuthUnavailable as e:
        raise database_unavailable(str(e), retry_after=e.retry_after_s) from e


TenantDep = Annotated[Principal, Depends(authenticate)]

NO_ANY_KEY = ("You didn't provide an API key. Send it in an x-api-key header, or in an Authorization header "
              "using Bearer auth.")


async def authenticate_any_key(request: Request) -> Principal:
    """`authenticate`, for clients that send the key as `x-api-key` (Anthropic's SDKs) or as Bearer."""
    _check_throttle(request)
    key = request.headers.get("x-api-key", "").strip()
    if not key and not request.headers.get("authorization"):
        raise invalid_api_key(NO_ANY_KEY)
    return await _tenant(request, key or bearer_token(request))


AnyKeyTenantDep = Annotated[Principal, Depends(authenticate_any_key)]


async def require_admin(request: Request) -> None:
    """The admin credential as Bearer; anything else (a tenant key included) is a 401."""
    _check_throttle(request)
    if not admin_key_matches(bearer_token(request), request.app.state.services.admin_key):
        _failed(request)
        raise invalid_api_key("Incorrect admin key provided.")


AdminDep = Annotated[None, Depends(require_admin)]
