"""Guardrails in the pipeline, kept thin: the rules live in gateway.guardrails.

    screen_input: before admission (so the redacted prompt is what is counted, cached, generated and billed):
                  deny patterns and PII over every message or the prompt
    admitted:     after admission: model access on the name called and the model it was routed to (an alias may
                  lead to an allowed model), the prompt's exact token count; attaches the output rules
    (output_guard.OutputGuard: the answer's text through a hold-back filter per completion, streamed or whole)

A block is a 400 `content_blocked` naming the rule; a rule that fails refuses the request with a 503
`guardrail_error` (fail closed) unless it was saved with fail_open."""
from __future__ import annotations

import asyncio
from typing import Any

from gateway.api.v1.pipeline.admit import OFFLOAD_PROMPT_BYTES
from gateway.api.v1.pipeline.job import Job
from gateway.api.v1.pipeline.run import Run
from gateway.domain.errors import APIError
from gateway.guardrails.engine import check_model, check_prompt_tokens
from gateway.guardrails.errors import ContentBlocked, GuardrailFailed, RuleError
from gateway.guardrails.policy import Policy
from gateway.guardrails.tally import Tally

HEADER = "x-tollgate-guardrails"


def content_blocked(e: ContentBlocked, fired: Tally | None = None, param: str | None = None) -> APIError:
    """400 naming the rule (and, for input, the request field); `fired` (what matched so far) goes in
    x-tollgate-guardrails, as on an answer."""
    headers = {HEADER: fired.header()[:1024]} if fired else None
    return APIError(400, str(e), code="content_blocked", param=param, headers=headers)


def guardrail_failed(e: GuardrailFailed) -> APIError:
    return APIError(503, str(e), type="server_error", code="guardrail_error")


def as_api_error(e: Exception) -> APIError:
    return content_blocked(e) if isinstance(e, ContentBlocked) else guardrail_failed(e)


async def screen_input(svc: Any, principal: Any, job: Job, body: Any = None) -> tuple[Job, Any, Policy | None]:
    """(job, body, policy) with the input rules applied: the prompt redacted in both the job (what the model
    sees) and the chat body (what the semantic cache keys on); APIError when a rule blocks or fails."""
    store = getattr(svc, "guardrails", None)
    try:
        rules = await store.rules_for(principal.tenant_id) if store is not None else ()
    except RuleError:  # a saved rule this version cannot run (an entity since removed): fail closed
        raise guardrail_failed(GuardrailFailed("saved rules")) from None
    if not rules:
        return job, body, None
    policy = Policy.of(rules, principal.key_id)
    try:
        if policy.input:
            body = await _redact(job, body, policy)
    except ContentBlocked as e:
        raise content_blocked(e, policy.tally, job.prompt_param) from None
    except GuardrailFailed as e:
        raise guardrail_failed(e) from None
    finally:
        policy.tally.report("input", principal.tenant_id, counter(svc))
    if job.logprobs is not None and policy.output:
        # Logprobs carry each token's text: they would send what the output rules hold back or mask.
        raise APIError(400, "logprobs cannot be returned while output guardrails apply to this key.",
                       param="logprobs", code="guardrails_logprobs")
    return job, body, policy


async def screen_texts(svc: Any, principal: Any, model: str, texts: list[str]) -> tuple[list[str], str | None]:
    """The input rules over texts that are not a prompt (embeddings' inputs): (texts redacted, the
    x-tollgate-guardrails value or None); APIError when a rule blocks or fails."""
    job = Job("/v1/embeddings", model, None, [{"role": "user", "content": t} for t in texts], None, 1.0, 1.0,
              None, [], False, False, None)
    try:
        job, _, policy = await screen_input(svc, principal, job)
    except APIError as e:
        if e.code == "content_blocked":
            e.param = "input"  # this API's name for the texts
        raise
    if policy is None:
        return texts, None
    return [m["content"] for m in job.messages], policy.tally.header() or None


def admitted(run: Run, policy: Policy | None) -> None:
    """The rules that need the admitted request: its exact prompt tokens and the priced model it was routed to.
    A block here finishes the run unbilled (nothing was generated)."""
    if policy is None:
        return
    late = Tally()  # logged on its own: what screen_input found is logged already
    try:
        check_model(policy.input_rules, [run.job.model, run.model], late)
        check_prompt_tokens(policy.input_rules, run.prompt_tokens, late)
    except ContentBlocked as e:
        run.finish("refused")
        policy.tally.merge(late)
        raise content_blocked(e, policy.tally, run.job.prompt_param) from None
    except BaseException:
        run.finish("error")  # whatever else went wrong, the run's reservation and drain place go back
        raise
    finally:
        late.report("input", run.principal.tenant_id, counter(run.svc))
    policy.tally.merge(late)
    run.guardrails = policy


def counter(svc: Any):
    """The matches metric (tollgate_guardrail_matches_total), where the services have metrics."""
    metrics = getattr(svc, "metrics", None)
    if metrics is None:
        return None
    return lambda tenant_id, stage, mode, n: metrics.guardrails.labels(tenant_id, stage, mode).inc(n)


async def _redact(job: Job, body: Any, policy: Policy) -> Any:
    """Redact the job in place and return the body redacted; a large prompt off the event loop, as admission
    tokenizes one."""
    def both() -> Any:
        _redact_job(job, policy)
        return _redact_body(body, policy)
    if job.prompt_bytes() > OFFLOAD_PROMPT_BYTES:
        return await asyncio.to_thread(both)
    return both()


def _redact_job(job: Job, policy: Policy) -> None:
    if job.messages is not None:
        job.messages = [{**m, "content": policy.input.apply(m["content"], policy.tally, "input")}
                        for m in job.messages]
    else:
        job.prompt = policy.input.apply(job.prompt, policy.tally, "input")


def redacted_messages(policy: Policy | None, messages: list[dict]) -> list[dict]:
    """`messages` as the input rules redact them (counted in a scratch tally: the job's are the counted
    ones), for what is kept beside the request (a stored response's conversation)."""
    if policy is None or not policy.input:
        return messages
    scratch = Tally()
    return [{**m, "content": policy.input.apply(m["content"], scratch, "input")} for m in messages]


def _redact_body(body: Any, policy: Policy) -> Any:
    """The chat body's messages redacted as the job's were (counted once: in the job's tally)."""
    messages = getattr(body, "messages", None)
    if messages is None:
        return body
    scratch = Tally()

    def clean(m):
        if isinstance(m.content, str):
            return m.model_copy(update={"content": policy.input.apply(m.content, scratch, "input")})
        if isinstance(m.content, list):
            parts = [p.model_copy(update={"text": policy.input.apply(p.text, scratch, "input")}) for p in m.content]
            return m.model_copy(update={"content": parts})
        return m
    return body.model_copy(update={"messages": [clean(m) for m in messages]})


def header_value(run: Run) -> str | None:
    """What fired so far: input rules (known before a stream's headers) and, for a whole answer, output rules."""
    policy = getattr(run, "guardrails", None)
    if policy is None:
        return None
    value = ",".join(h for h in (policy.tally.header(), policy.output_tally.header()) if h)
    return value or None
