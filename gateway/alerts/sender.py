"""One delivery attempt: POST the stored body, signed, to the address the target policy checked, and say what
happened (never raises). The receiver's answer body is never read nor kept: only its status code and a short
classification, so a receiver can neither fill the gateway's memory nor have its text shown on /deliveries."""
from __future__ import annotations

import asyncio
import time

import httpx

from gateway.alerts.outbox import Claimed, Outcome
from gateway.alerts.signing import EVENT_ID_HEADER, EVENT_TYPE_HEADER, SIGNATURE_HEADER, signature
from gateway.alerts.targets import TargetPolicy, UnsafeTarget

USER_AGENT = "tollgate-webhooks/1"


def classify_status(code: int) -> str:
    if 300 <= code < 400:
        return "redirect (not followed)"
    if code == 429:
        return "rate limited"
    if 400 <= code < 500:
        return "client error"
    if code >= 500:
        return "server error"
    return "unexpected status"


def classify_error(e: Exception) -> str:
    """A short, fixed description: exception messages may carry what a receiver sent."""
    if isinstance(e, httpx.TimeoutException):
        return f"{type(e).__name__}: timed out"
    if isinstance(e, httpx.ConnectError):
        return "ConnectError: connection refused, unreachable or TLS failed"
    if isinstance(e, httpx.RemoteProtocolError):
        return "RemoteProtocolError: the receiver broke the HTTP exchange"
    if isinstance(e, httpx.TransportError):
        return f"{type(e).__name__}: transport failed"
    return f"{type(e).__name__}: request failed"


async def send(client: httpx.AsyncClient, delivery: Claimed, *, secret: str, timeout_s: float,
               policy: TargetPolicy | None = None) -> Outcome:
    """2xx is delivered; anything else (another status, a timeout, a refused connection, a target the policy
    refuses) is a failed attempt. Redirects are not followed: a receiver answers where it was told to. `secret` is
    the webhook's, opened (the delivery holds it as stored). `timeout_s` bounds the whole attempt, name resolution
    included (httpx's own timeouts are per read, so a receiver that trickles bytes could outlive the delivery's
    lease)."""
    policy = policy if policy is not None else TargetPolicy()
    body = delivery.body.encode()
    headers = {"content-type": "application/json", "user-agent": USER_AGENT, EVENT_ID_HEADER: delivery.id,
               EVENT_TYPE_HEADER: delivery.event_type,
               SIGNATURE_HEADER: signature(secret, body, int(time.time()))}
    try:
        async with asyncio.timeout(timeout_s):
            url, extensions = delivery.url, {}
            pinned = await policy.pin(delivery.url)
            if pinned is not None:  # connect to the checked address; the receiver still sees its own name
                url, headers["host"] = pinned.url, pinned.host_header
                extensions["sni_hostname"] = pinned.server_name
            async with client.stream("POST", url, content=body, headers=headers, extensions=extensions) as response:
                code = response.status_code  # the body is left unread
    except UnsafeTarget as e:
        return Outcome(False, None, f"blocked: {e}")
    except TimeoutError:
        return Outcome(False, None, f"TimeoutError: no answer within {timeout_s:g}s")
    except (OSError, UnicodeError):  # name resolution (a socket.gaierror is an OSError)
        return Outcome(False, None, "DNS: the host did not resolve")
    except Exception as e:  # httpx's errors and a URL it cannot use: the attempt failed, the worker carries on
        return Outcome(False, None, classify_error(e))
    if 200 <= code < 300:
        return Outcome(True, code)
    return Outcome(False, code, f"HTTP {code}: {classify_status(code)}")
