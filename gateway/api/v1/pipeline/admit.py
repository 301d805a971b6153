"""Admission, cheapest checks first: route -> bound the prompt -> reserve -> classify and route again (only
when the alias' routing rules need a task class) -> count it exactly -> validate.

The rate limits and the budget are charged before anything costly: the reservation takes an upper bound
of the prompt's tokens that needs no tokenizer (a token covers at least one byte of the rendered text, so
the sent text's UTF-8 bytes plus the chat template's own overhead bound it). Only an admitted request pays
for rendering the chat template and tokenizing, off the event loop when the prompt is large; its settle
at the end returns what the bound over-reserved. A request the bound refuses only on tokens is counted
exactly and tried once more, so a prompt near its tenant's limit is judged on its real size."""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from functools import lru_cache

from gateway.api.v1.pipeline.facts import facts_of, with_task
from gateway.api.v1.pipeline.job import Job
from gateway.api.v1.pipeline.run import Run
from gateway.domain.errors import APIError, invalid_request, model_not_found, no_capacity, permission_denied
from gateway.limits.errors import LimitError, QuotaExceeded, RateLimited
from gateway.routing.errors import RoutingError, UnknownModel
from gateway.routing.metrics import RULE_DECISIONS
from gateway.routing.rules import Facts
from gateway.services import Services

# Prompts above this many bytes are rendered and tokenized in a worker thread, not on the event loop.
OFFLOAD_PROMPT_BYTES = 16_384


@dataclass(slots=True, frozen=True)
class Route:
    model: str  # the priced model the router chose
    candidates: list[str]  # versions to try, in order
    pinned: bool  # the client named the version (x-tollgate-version or a version name)
    counting: str  # the loaded version whose tokenizer counts the prompt
    max_model_len: int
    rule: str | None = None  # the routing rule that chose the versions, if one did
    alias: str | None = None  # the route's name (the rule's alias)


def route(svc: Services, principal, request_id: str, job: Job, *, pin: str | None, session: str | None,
          facts: Facts | None = None) -> Route:
    """Which versions may serve the job; raises the client's error. In memory only: no I/O. `facts` (default:
    without a task class) are what the alias' routing rules see."""
    if not svc.drain.accepting:
        raise no_capacity("The gateway is shutting down; retry on another instance.")
    svc.ledger.ensure_room()  # LedgerFull -> 503: the database is down and the usage spool is full
    try:
        decision = svc.router.resolve(job.model, request_id=request_id, user=job.user or session, pin=pin,
                                      facts=facts if facts is not None else facts_of(svc, principal, job))
    except UnknownModel:
        raise model_not_found(job.model) from None
    except RoutingError as e:
        raise invalid_request(str(e), param=e.param) from None
    allowed = principal.key_models
    if allowed is not None and job.model not in allowed and decision.model not in allowed \
            and decision.alias not in allowed:
        raise permission_denied(f"This API key may not use the model `{job.model}`.")
    loaded = svc.loaded_versions()
    counting = next((v for v in decision.candidates if v in loaded), None)
    if counting is None:
        raise no_capacity()
    return Route(decision.model, decision.candidates, decision.pinned, counting, loaded[counting].max_model_len,
                 decision.rule, decision.alias)


async def admit(svc: Services, principal, request_id: str, job: Job, *, pin: str | None,
                session: str | None) -> Run:
    """A run that holds its reservation and knows its exact prompt and max_tokens; the client's error
    otherwise (nothing billed, nothing held)."""
    started = time.perf_counter()
    clamped = cap_output(principal, job)
    facts = facts_of(svc, principal, job)
    chosen = route(svc, principal, request_id, job, pin=pin, session=session, facts=facts)
    bound = prompt_bound(svc, chosen.counting, job)
    counted: int | None = None
    try:
        run = await reserve(svc, principal, request_id, job, chosen, bound, started)
    except (RateLimited, QuotaExceeded) as e:
        if isinstance(e, RateLimited) and e.unit != "tokens":
            raise  # a full requests window: the prompt's size changes nothing
        # Refused on the bound's tokens: judge the prompt on its real size before refusing it (once).
        counted = await count_prompt(svc, chosen.counting, job)
        if counted >= bound:
            raise
        run = await reserve(svc, principal, request_id, job, chosen, counted, started)
    try:
        # Classified only once admitted: a request over its tenant's limits costs no embedding.
        classified = await with_task(svc, job, facts, pin=pin)
        if classified is not None:
            again = route(svc, principal, request_id, job, pin=pin, session=session, facts=classified)
            if again.counting != chosen.counting:
                counted = None  # another tokenizer may count it differently
            run.model, run.candidates, run.rule = again.model, list(again.candidates), again.rule
            chosen = again
        run.prompt_tokens = counted if counted is not None else await count_prompt(svc, chosen.counting, job)
        run.max_tokens = max_tokens(job, run.prompt_tokens, chosen.max_model_len, default_tokens(svc, principal))
        run.clamped = clamped
        if clamped is not None or (job.max_tokens is None and principal.default_max_tokens is not None):
            run.plan_max_tokens = run.max_tokens  # the tenant's plan set the limit, not the body
        # Hold only the real worst case from here on: concurrent requests of the tenant see the true room.
        await svc.limiter.shrink(run.reservation, run.prompt_tokens + run.max_tokens * job.generated)
    except BaseException as e:
        run.finish("refused" if isinstance(e, APIError) else "aborted")  # nothing produced: all goes back
        raise
    if chosen.rule is not None:
        RULE_DECISIONS.labels(chosen.alias, chosen.rule).inc()
    return run


async def reserve(svc: Services, principal, request_id: str, job: Job, chosen: Route, prompt_tokens: int,
                  started: float) -> Run:
    """Charge one request and the worst case (prompt + max_tokens for each completion generated) against RPM,
    TPM and the month's budget.
    A stream may start on less budget (at least its prompt and one token) and meter the rest."""
    est = prompt_tokens + min(job.max_tokens or default_tokens(svc, principal), chosen.max_model_len) * job.generated
    reservation = await reserve_tokens(svc, principal, est, min_tokens=prompt_tokens + 1 if job.stream else None)
    return Run(svc, principal, request_id, endpoint=job.endpoint, model=chosen.model, reservation=reservation,
               started=started, job=job, candidates=chosen.candidates, pinned=chosen.pinned, kind=job.kind,
               rule=chosen.rule)


async def reserve_tokens(svc: Services, principal, tokens: int, *, min_tokens: int | None = None):
    """The limiter's reservation, with refusals counted by reason."""
    try:
        return await svc.limiter.reserve(principal, tokens, min_tokens=min_tokens)
    except (APIError, LimitError) as e:
        svc.metrics.rejections.labels(principal.tenant_id, e.code or e.type).inc()
        raise


def prompt_bound(svc: Services, version: str, job: Job) -> int:
    """An upper bound of the prompt's tokens without tokenizing it: its bytes, plus what the version's chat
    template adds (measured once per version on empty messages)."""
    if job.messages is None:
        return job.prompt_bytes() + 1
    base, per_message = _template_overhead(svc.backend, version)
    return base + per_message * len(job.messages) + job.prompt_bytes()


@lru_cache(maxsize=64)
def _template_overhead(backend, version: str) -> tuple[int, int]:
    """(tokens of a one-message conversation with empty content, tokens each further message adds)."""
    one = backend.count_prompt_tokens(version, messages=[{"role": "user", "content": ""}])
    two = backend.count_prompt_tokens(version, messages=[{"role": "user", "content": ""},
                                                         {"role": "assistant", "content": ""}])
    return one, max(0, two - one)


async def count_prompt(svc: Services, version: str, job: Job) -> int:
    """The prompt's exact tokens (chat template applied); a 400 naming the param if the template refuses it."""
    try:
        if job.prompt_bytes() > OFFLOAD_PROMPT_BYTES:
            return await asyncio.to_thread(svc.backend.count_prompt_tokens, version, prompt=job.prompt,
                                           messages=job.messages)
        return svc.backend.count_prompt_tokens(version, prompt=job.prompt, messages=job.messages)
    except ValueError as e:
        raise invalid_request(str(e), param=job.prompt_param) from None


def cap_output(principal, job: Job) -> tuple[int, int] | None:
    """Hold the job to its key's and tenant's output cap: a request asking for more is refused (400 naming the
    cap and the param), or under `clamp` runs at the cap; (asked, cap) when it was clamped."""
    cap = principal.max_output_tokens
    if not job.max_tokens_named:  # the API's default (completions' 16), not the client's ask: the plan's rules win
        if principal.default_max_tokens is not None:
            job.max_tokens = None
        elif cap is not None and job.max_tokens is not None:
            job.max_tokens = min(job.max_tokens, cap)
        return None
    if cap is None or job.max_tokens is None or job.max_tokens <= cap:
        return None
    asked = job.max_tokens
    if principal.output_cap_mode != "clamp":
        raise invalid_request(f"{job.max_tokens_param} ({asked}) exceeds this API key's output cap of {cap} tokens.",
                              param=job.max_tokens_param, code="max_output_tokens_exceeded")
    job.max_tokens = cap
    return asked, cap


def default_tokens(svc: Services, principal) -> int:
    """What a request naming no max_tokens may generate (before the context bounds it): the key's or tenant's
    default, else the gateway's, never above the cap."""
    default = principal.default_max_tokens or svc.settings.default_max_tokens
    cap = principal.max_output_tokens
    return default if cap is None else min(default, cap)


def max_tokens(job: Job, prompt_tokens: int, max_model_len: int, default: int) -> int:
    room = max_model_len - prompt_tokens
    if room < 1:
        raise invalid_request(f"The prompt is {prompt_tokens} tokens; this model's context is {max_model_len}.",
                              param=job.prompt_param, code="context_length_exceeded")
    if job.max_tokens is None:
        return min(default, room)
    if job.max_tokens > room:
        raise invalid_request(f"max_tokens ({job.max_tokens}) plus the prompt ({prompt_tokens} tokens) exceeds "
                              f"this model's context of {max_model_len} tokens.", param="max_tokens",
                              code="context_length_exceeded")
    return job.max_tokens
