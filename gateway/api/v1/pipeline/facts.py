"""What the routing rules see of a request (gateway.routing.rules.Facts), gathered before it is tokenized."""
from __future__ import annotations

import asyncio
from dataclasses import replace

from gateway.api.v1.pipeline.job import Job
from gateway.routing.rules import Facts
from gateway.services import Services


def facts_of(svc: Services, principal, job: Job) -> Facts:
    """prompt_tokens is the prompt's UTF-8 bytes: an upper bound of its tokens that needs no tokenizer (a token
    covers at least one byte); the exact count comes later, from the version the rules choose."""
    return Facts(prompt_tokens=job.prompt_bytes(), max_tokens=job.max_tokens or svc.settings.default_max_tokens,
                 plan=principal.plan, task=None)


def task_text(job: Job) -> str:
    """What the classifier reads: the last user message (the request's ask), or the completion prompt."""
    if job.messages is None:
        return job.prompt or ""
    users = [m["content"] for m in job.messages if m.get("role") == "user" and m.get("content")]
    return users[-1] if users else job.messages[-1].get("content") or ""


async def with_task(svc: Services, job: Job, facts: Facts, *, pin: str | None) -> Facts | None:
    """The facts with the request's task class when the alias' rules reach a task condition (one embedding, off
    the event loop); None when they decide without it. A pinned request skips rules, so it never pays for one."""
    classifier = svc.classifier
    if pin is not None or classifier is None or not svc.router.wants_task(job.model, facts):
        return None
    return replace(facts, task=await asyncio.to_thread(classifier.classify, task_text(job)))
