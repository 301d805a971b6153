"""The API's credential checks: the calling tenant (a Bearer or x-api-key key) and the admin credential.

The services container and the DB session come from gateway.services.deps, which the console shares.
"""
from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Annotated, TypeVar

from fastapi import Depends, Request

from gateway.domain.errors import APIError, database_unavailable, invalid_api_key
from gateway.security.admin_key import admin_key_matches
from gateway.security.auth_throttle import Attempt, Throttled, retry_after_header
from gateway.security.authenticator import AuthUnavailable, InvalidKey
from gateway.security.principal import Principal
from gateway.services.deps import client_address

T = TypeVar("T")

NO_KEY = ("You didn't provide an API key. You need to provide your API key in an Authorization "
          "header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).")


def bearer_token(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise invalid_api_key(NO_KEY)
    return token


def too_many_failures(retry_after_s: float) -> APIError:
    return APIError(429, "Too many requests with invalid credentials from this address or for this key; "
                    "retry later.", type="rate_limit_error", code="too_many_failed_authentications",
                    headers={"Retry-After": retry_after_header(retry_after_s)})


async def check_credential(request: Request, credential: str,
                           verify: Callable[[AbstractAsyncContextManager], Awaitable[T]]) -> T:
    """`verify(lookup_slot)` under the failed-attempt throttle (gateway.security.auth_throttle): a credential
    that validates always passes; InvalidKey when it fails, a 429 once its address or prefix failed too often."""
    throttle = getattr(request.app.state.services, "auth_throttle", None)
    if throttle is None:  # an app built without one (narrow route tests)
        return await verify(contextlib.nullcontext())
    try:
        return await throttle.check(Attempt.of(client_address(request), credential), verify)
    except Throttled as e:
        raise too_many_failures(e.retry_after_s) from None


async def authenticate(request: Request) -> Principal:
    """The tenant behind the Bearer key; 401 invalid_api_key otherwise, 503 database_unavailable
    when the database cannot be reached and the key is not one the cache still vouches for, 429 when
    this address or key prefix has presented too many bad keys (a valid key still passes)."""
    return await _tenant(request, bearer_token(request))


async def _tenant(request: Request, token: str) -> Principal:
    authenticator = request.app.state.services.authenticator
    try:
        return await check_credential(request, token,
                                      lambda slot: authenticator.authenticate(token, lookup_slot=slot))
    except InvalidKey as e:
        raise invalid_api_key(str(e)) from e
    except AuthUnavailable as e:
        raise database_unavailable(str(e), retry_after=e.retry_after_s) from e


TenantDep = Annotated[Principal, Depends(authenticate)]

NO_ANY_KEY = ("You didn't provide an API key. Send it in an x-api-key header, or in an Authorization header "
              "using Bearer auth.")


async def authenticate_any_key(request: Request) -> Principal:
    """`authenticate`, for clients that send the key as `x-api-key` (Anthropic's SDKs) or as Bearer."""
    key = request.headers.get("x-api-key", "").strip()
    if not key and not request.headers.get("authorization"):
        raise invalid_api_key(NO_ANY_KEY)
    return await _tenant(request, key or bearer_token(request))


AnyKeyTenantDep = Annotated[Principal, Depends(authenticate_any_key)]


async def require_admin(request: Request) -> None:
    """The admin credential as Bearer; anything else (a tenant key included) is a 401."""
    token = bearer_token(request)

    async def verify(_slot: AbstractAsyncContextManager) -> None:
        if not admin_key_matches(token, request.app.state.services.admin_key):
            raise InvalidKey("Incorrect admin key provided.")

    try:
        await check_credential(request, token, verify)
    except InvalidKey as e:
        raise invalid_api_key(str(e)) from e


AdminDep = Annotated[None, Depends(require_admin)]
