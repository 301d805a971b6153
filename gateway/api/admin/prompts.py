"""Admin: stored prompts, their immutable versions, and labels that move (with weights and rollback).
Every change is audited in its own transaction."""
from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Response
from fastapi.params import Path
from sqlalchemy.orm import Session

from gateway.api.admin.auditing import AuditorDep
from gateway.services.deps import SessionDep
from gateway.domain.errors import APIError, invalid_request
from gateway.api.v1.body import parse
from gateway.audit.auditor import Auditor
from gateway.audit.record import Target
from gateway.prompts import (LabelState, NoPreviousTarget, PromptError, PromptExists, PromptNotFound,
                             PromptVersion)
from gateway.prompts import store
from gateway.prompts.labels import target_weights
from gateway.prompts.render import variables_of
from gateway.schemas.openai import ChatCompletionRequest
from gateway.schemas.prompts import (LABEL_NAME, LabelMoveOut, LabelOut, LabelSet, PromptCreate, PromptCreated,
                                     PromptList, PromptOut, PromptSummary, PromptVersionBody, PromptVersionOut)

router = APIRouter()

LabelName = Annotated[str, Path(pattern=LABEL_NAME)]
# Request fields a prompt's params may not set: the request's own, or the prompt's other fields.
NOT_PARAMS = {"model", "messages", "prompt", "stream", "stream_options", "user"}


def _api_error(e: PromptError) -> APIError:
    if isinstance(e, PromptNotFound):
        return APIError(404, e.message, code="not_found", param=e.param)
    if isinstance(e, PromptExists):
        return APIError(409, e.message, code="prompt_exists", param=e.param)
    if isinstance(e, NoPreviousTarget):
        return APIError(409, e.message, code="no_previous_target", param=e.param)
    return invalid_request(e.message, param=e.param)  # InvalidTarget


def _check_params(params: dict[str, Any]) -> None:
    """A prompt's params must be what a chat request accepts: checked with the request's own parser, so a
    bad one is a 400 now, not on every request that uses the prompt."""
    refused = sorted(set(params) & NOT_PARAMS)
    if refused:
        raise invalid_request(f"params may not set {', '.join(refused)}.", param="params")
    probe = {**params, "model": "probe", "messages": [{"role": "user", "content": "probe"}]}
    try:
        body = parse(ChatCompletionRequest, json.dumps(probe).encode())
    except APIError as e:
        raise invalid_request(f"params: {e.message}", param=f"params.{e.param}" if e.param else "params") from None
    if body.ignored_fields:
        raise invalid_request(f"params: unknown field(s) {', '.join(body.ignored_fields)}.", param="params")


def _content(body: PromptVersionBody) -> dict[str, Any]:
    _check_params(body.params)
    return {"messages": [m.model_dump() for m in body.messages], "model": body.model, "params": body.params}


def _audit(auditor: Auditor, action: str, target: Target, before: Any = None, *, owner: str | None = None):
    def hook(session: Session, after: PromptVersion | LabelState) -> None:
        state = _jsonable(after)
        if owner is not None:
            state["tenant_id"] = owner
        auditor.record(session, action, target, before=before, after=state)
    return hook


def _jsonable(obj: PromptVersion | LabelState) -> dict[str, Any]:
    if isinstance(obj, PromptVersion):
        return {"version": obj.version, "messages": list(obj.messages), "model": obj.model, "params": obj.params}
    return {"label": obj.label, "weights": _weights(obj.weights), "revision": obj.revision}


def _weights(weights: dict[int, int] | None) -> dict[str, int] | None:
    return None if weights is None else {str(v): w for v, w in sorted(weights.items())}


def _version_out(v: PromptVersion) -> PromptVersionOut:
    return PromptVersionOut(version=v.version, messages=list(v.messages), model=v.model, params=v.params,
                            variables=variables_of(v.messages), created_at=v.created_at)


def _label_out(session: Session, state: LabelState, *, history: bool = True) -> LabelOut:
    moves = store.moves(session, name=state.name, label=state.label) if history else []
    return LabelOut(name=state.name, label=state.label, version=state.single, weights=_weights(state.weights),
                    previous=_weights(state.previous), revision=state.revision, updated_at=state.updated_at,
                    history=[LabelMoveOut(action=m.action, weights=m.weights, previous=m.previous, at=m.created_at)
                             for m in moves])


@router.post("/prompts", status_code=201, response_model=PromptCreated)
def create(body: PromptCreate, session: SessionDep, auditor: AuditorDep) -> PromptCreated:
    """Create a prompt: its version 1."""
    try:
        v = store.create_prompt(session, name=body.name, tenant_id=body.tenant_id, **_content(body),
                                audit=_audit(auditor, "prompt.create", Target("prompt", body.name),
                                             owner=body.tenant_id))
    except PromptError as e:
        raise _api_error(e) from None
    return PromptCreated(name=v.name, version=v.version, tenant_id=body.tenant_id)


@router.get("/prompts", response_model=PromptList)
def list_all(session: SessionDep, tenant_id: str | None = None) -> PromptList:
    """Every prompt (or one tenant's own), with its owner and latest version number."""
    return PromptList(data=[PromptSummary(name=n, tenant_id=t, latest_version=v, created_at=c)
                            for n, t, c, v in store.list_names(session, tenant_id=tenant_id)])


@router.post("/prompts/{name}/versions", status_code=201, response_model=PromptCreated)
def add_version(name: str, body: PromptVersionBody, session: SessionDep, auditor: AuditorDep) -> PromptCreated:
    """A new immutable version (latest + 1); labels stay where they are until moved."""
    try:
        v = store.add_version(session, name=name, **_content(body),
                              audit=_audit(auditor, "prompt.version", Target("prompt", name)))
    except PromptError as e:
        raise _api_error(e) from None
    return PromptCreated(name=v.name, version=v.version)


@router.get("/prompts/{name}", response_model=PromptOut)
def read(name: str, session: SessionDep) -> PromptOut:
    """A prompt's versions and labels (each label with its history, newest first)."""
    try:
        versions = store.versions(session, name=name)
    except PromptError as e:
        raise _api_error(e) from None
    return PromptOut(name=name, tenant_id=store.owner(session, name=name)[1],
                     versions=[_version_out(v) for v in versions],
                     labels={s.label: _label_out(session, s) for s in store.labels(session, name=name)})


@router.get("/prompts/{name}/labels/{label}", response_model=LabelOut)
def read_label(name: str, label: str, session: SessionDep) -> LabelOut:
    """Where a label points, and its history."""
    state = store.get_label(session, name=name, label=label)
    if state is None:
        raise _api_error(_missing_label(session, name, label))
    return _label_out(session, state)


def _missing_label(session: Session, name: str, label: str) -> PromptNotFound:
    if not store.exists(session, name=name):
        return PromptNotFound(f"No prompt named {name!r}.", param="name")
    return PromptNotFound(f"Prompt {name!r} has no label {label!r}.", param="label")


@router.put("/prompts/{name}/labels/{label}", response_model=LabelOut)
def set_label(name: str, label: LabelName, body: LabelSet, session: SessionDep, auditor: AuditorDep) -> LabelOut:
    """Point a label at one version or split it by weight (sticky per user); served by every replica from
    its next request on."""
    try:
        known = {v.version for v in store.versions(session, name=name)}
        weights = target_weights(version=body.version, weights=body.weights, known=known)
        before = store.get_label(session, name=name, label=label)
        state = store.set_label(session, name=name, label=label, weights=weights,
                                audit=_audit(auditor, "prompt.label", Target("prompt_label", f"{name}/{label}"),
                                             before and _jsonable(before)))
    except PromptError as e:
        raise _api_error(e) from None
    return _label_out(session, state)


@router.delete("/prompts/{name}/labels/{label}", status_code=204)
def delete_label(name: str, label: str, session: SessionDep, auditor: AuditorDep) -> Response:
    """Remove a label; its history is kept."""
    if store.get_label(session, name=name, label=label) is None:
        raise _api_error(_missing_label(session, name, label))
    try:
        store.delete_label(session, name=name, label=label,
                           audit=_deleted(auditor, Target("prompt_label", f"{name}/{label}")))
    except PromptError as e:
        raise _api_error(e) from None
    return Response(status_code=204)


def _deleted(auditor: Auditor, target: Target):
    def hook(session: Session, was: LabelState) -> None:
        auditor.record(session, "prompt.unlabel", target, before=_jsonable(was), after=None)
    return hook


@router.post("/prompts/{name}/labels/{label}/rollback", response_model=LabelOut)
def rollback(name: str, label: str, session: SessionDep, auditor: AuditorDep) -> LabelOut:
    """Back to the label's previous target (the rollback is kept in its history)."""
    before = store.get_label(session, name=name, label=label)
    if before is None:
        raise _api_error(_missing_label(session, name, label))
    try:
        state = store.rollback_label(session, name=name, label=label,
                                     audit=_audit(auditor, "prompt.rollback", Target("prompt_label", f"{name}/{label}"),
                                                    _jsonable(before)))
    except PromptError as e:
        raise _api_error(e) from None
    return _label_out(session, state)

