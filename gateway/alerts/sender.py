"""One delivery attempt: POST the stored body, signed, and say what happened (never raises)."""
from __future__ import annotations

import asyncio
import time

import httpx

from gateway.alerts.outbox import Claimed, Outcome
from gateway.alerts.signing import EVENT_ID_HEADER, EVENT_TYPE_HEADER, SIGNATURE_HEADER, signature

USER_AGENT = "tollgate-webhooks/1"


async def send(client: httpx.AsyncClient, delivery: Claimed, *, timeout_s: float, error_chars: int = 300) -> Outcome:
    """2xx is delivered; anything else (another status, a timeout, a refused connection) is a failed attempt
    whose error is kept on the delivery. Redirects are not followed: a receiver answers where it was told to.
    `timeout_s` bounds the whole attempt (httpx's own timeouts are per read, so a receiver that trickles bytes
    could outlive the delivery's lease)."""
    try:
        body = delivery.body.encode()
        headers = {"content-type": "application/json", "user-agent": USER_AGENT, EVENT_ID_HEADER: delivery.id,
                   EVENT_TYPE_HEADER: delivery.event_type,
                   SIGNATURE_HEADER: signature(delivery.secret, body, int(time.time()))}
        async with asyncio.timeout(timeout_s):
            response = await client.post(delivery.url, content=body, headers=headers)
    except TimeoutError:
        return Outcome(False, None, f"TimeoutError: no answer within {timeout_s:g}s")
    except Exception as e:  # httpx's errors and a URL it cannot use: the attempt failed, the worker carries on
        return Outcome(False, None, f"{type(e).__name__}: {e}"[:error_chars])
    if 200 <= response.status_code < 300:
        return Outcome(True, response.status_code)
    return Outcome(False, response.status_code, f"HTTP {response.status_code}: {response.text[:error_chars]}")
