"""Prompt rows in and out of the database: keyword-only functions over a Session. Every write commits with
its audit row (the `audit` hook, gateway.crud.commit); the caller's Auditor makes it."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from gateway.db.models.prompt import Prompt, PromptVersionRow
from gateway.db.models.prompt_label import PromptLabel, PromptLabelMove
from gateway.db.models.tenant import Tenant
from gateway.db.types import utcnow
from gateway.prompts.errors import NoPreviousTarget, PromptExists, PromptNotFound, UnknownOwner
from gateway.prompts.types import LabelState, PromptVersion

# (session, what was written) -> None: records the audit row in the same transaction.
Audit = Callable[[Session, Any], None]


def _version(row: PromptVersionRow) -> PromptVersion:
    return PromptVersion(row.name, row.version, tuple(dict(m) for m in row.messages), row.model,
                         dict(row.params or {}), row.created_at)


def _weights(raw: dict[str, int] | None) -> dict[int, int] | None:
    return None if raw is None else {int(k): int(w) for k, w in raw.items()}


def _raw(weights: dict[int, int]) -> dict[str, int]:
    return {str(v): w for v, w in sorted(weights.items())}


def _label(row: PromptLabel) -> LabelState:
    return LabelState(row.name, row.label, _weights(row.weights), _weights(row.previous), row.revision,
                      row.updated_at)


def exists(session: Session, *, name: str) -> bool:
    return session.get(Prompt, name) is not None


def owner(session: Session, *, name: str) -> tuple[bool, str | None]:
    """(whether the prompt exists, its owning tenant: None when shared)."""
    row = session.execute(select(Prompt.tenant_id).where(Prompt.name == name)).first()
    return (False, None) if row is None else (True, row[0])


def visible_to(session: Session, *, name: str, tenant_id: str) -> bool:
    """Whether `tenant_id`'s keys may serve the prompt: it exists and is shared or theirs."""
    found, owned_by = owner(session, name=name)
    return found and owned_by in (None, tenant_id)


def _require(session: Session, name: str) -> None:
    if not exists(session, name=name):
        raise PromptNotFound(f"No prompt named {name!r}.", param="name")


def create_prompt(session: Session, *, name: str, messages: list[dict], model: str | None, params: dict,
                  tenant_id: str | None = None, audit: Audit | None = None) -> PromptVersion:
    """The prompt and its version 1, owned by `tenant_id` (None: shared); PromptExists when the name is
    taken, UnknownOwner when the tenant does not exist."""
    if exists(session, name=name):
        raise PromptExists(f"A prompt named {name!r} already exists.", param="name")
    if tenant_id is not None and session.get(Tenant, tenant_id) is None:
        raise UnknownOwner(f"No tenant with id {tenant_id!r}.", param="tenant_id")
    session.add(Prompt(name=name, tenant_id=tenant_id))
    session.flush()  # the prompt row before its version's (no ORM relationship orders them)
    return _write_version(session, name=name, version=1, messages=messages, model=model, params=params,
                          audit=audit, taken=PromptExists(f"A prompt named {name!r} already exists.", param="name"))


def add_version(session: Session, *, name: str, messages: list[dict], model: str | None, params: dict,
                audit: Audit | None = None) -> PromptVersion:
    """The next version (latest + 1)."""
    _require(session, name)
    latest = session.scalar(select(func.max(PromptVersionRow.version)).where(PromptVersionRow.name == name)) or 0
    return _write_version(session, name=name, version=latest + 1, messages=messages, model=model, params=params,
                          audit=audit, taken=PromptExists(f"Version {latest + 1} of {name!r} was just written "
                                                          "by another request; try again.", param="name"))


def _write_version(session: Session, *, name: str, version: int, messages: list[dict], model: str | None,
                   params: dict, audit: Audit | None, taken: PromptExists) -> PromptVersion:
    row = PromptVersionRow(name=name, version=version, messages=messages, model=model, params=params)
    session.add(row)
    try:
        session.flush()
        out = _version(row)
        if audit is not None:
            audit(session, out)
        session.commit()
    except IntegrityError as e:  # lost a race for the name or the version number
        session.rollback()
        raise taken from e
    return out


def list_names(session: Session, *, tenant_id: str | None = None) -> list[tuple[str, str | None, Any, int]]:
    """(name, owner, created_at, latest version) for every prompt, by name; with `tenant_id`, only that
    tenant's own prompts."""
    stmt = (select(Prompt.name, Prompt.tenant_id, Prompt.created_at, func.max(PromptVersionRow.version))
            .join(PromptVersionRow, PromptVersionRow.name == Prompt.name)
            .group_by(Prompt.name, Prompt.tenant_id, Prompt.created_at).order_by(Prompt.name))
    if tenant_id is not None:
        stmt = stmt.where(Prompt.tenant_id == tenant_id)
    return [(n, t, c, int(v)) for n, t, c, v in session.execute(stmt)]


def versions(session: Session, *, name: str) -> list[PromptVersion]:
    _require(session, name)
    stmt = select(PromptVersionRow).where(PromptVersionRow.name == name).order_by(PromptVersionRow.version)
    return [_version(r) for r in session.scalars(stmt)]


def get_version(session: Session, *, name: str, version: int) -> PromptVersion:
    row = session.get(PromptVersionRow, (name, version))
    if row is None:
        _require(session, name)
        raise PromptNotFound(f"Prompt {name!r} has no version {version}.", param="prompt.version")
    return _version(row)


def latest_version(session: Session, *, name: str) -> int:
    latest = session.scalar(select(func.max(PromptVersionRow.version)).where(PromptVersionRow.name == name))
    if latest is None:
        raise PromptNotFound(f"No prompt named {name!r}.", param="prompt.id")
    return int(latest)


def get_label(session: Session, *, name: str, label: str) -> LabelState | None:
    row = session.get(PromptLabel, (name, label))
    return None if row is None else _label(row)


def label_weights(session: Session, *, name: str, label: str) -> dict[int, int] | None:
    """Where a label points now: the one column, on the request path (no ORM row to build)."""
    stmt = select(PromptLabel.weights).where(PromptLabel.name == name, PromptLabel.label == label)
    return _weights(session.execute(stmt).scalar())


def labels(session: Session, *, name: str) -> list[LabelState]:
    stmt = select(PromptLabel).where(PromptLabel.name == name).order_by(PromptLabel.label)
    return [_label(r) for r in session.scalars(stmt)]


def moves(session: Session, *, name: str, label: str, limit: int = 50) -> list[PromptLabelMove]:
    """A label's history, newest first."""
    stmt = (select(PromptLabelMove).where(PromptLabelMove.name == name, PromptLabelMove.label == label)
            .order_by(PromptLabelMove.id.desc()).limit(limit))
    return list(session.scalars(stmt))


def set_label(session: Session, *, name: str, label: str, weights: dict[int, int], action: str = "set",
              audit: Audit | None = None) -> LabelState:
    """Point `label` at `weights` (validated by the caller against the prompt's versions); the target it
    leaves becomes its `previous`, and the move is kept in the label's history."""
    try:
        return _set_label(session, name=name, label=label, weights=weights, action=action, audit=audit)
    except IntegrityError:  # another request created the label first: move it from where that one put it
        session.rollback()
        return _set_label(session, name=name, label=label, weights=weights, action=action, audit=audit)


def _set_label(session: Session, *, name: str, label: str, weights: dict[int, int], action: str,
               audit: Audit | None) -> LabelState:
    row = session.get(PromptLabel, (name, label), with_for_update=True)
    raw = _raw(weights)
    if row is None:
        row = PromptLabel(name=name, label=label, weights=raw, previous=None, revision=1, updated_at=utcnow())
        session.add(row)
    else:
        row.previous, row.weights = row.weights, raw
        row.revision, row.updated_at = row.revision + 1, utcnow()
    session.add(PromptLabelMove(name=name, label=label, action=action, weights=raw, previous=row.previous))
    session.flush()
    out = _label(row)
    if audit is not None:
        audit(session, out)
    session.commit()
    return out


def rollback_label(session: Session, *, name: str, label: str, audit: Audit | None = None) -> LabelState:
    """Back to the target the label pointed at before its last move (itself kept as history)."""
    state = get_label(session, name=name, label=label)
    if state is None:
        raise PromptNotFound(f"Prompt {name!r} has no label {label!r}.", param="label")
    if state.previous is None:
        raise NoPreviousTarget(f"Label {label!r} of {name!r} has never moved: there is nothing to roll back to.",
                               param="label")
    return set_label(session, name=name, label=label, weights=state.previous, action="rollback", audit=audit)


def delete_label(session: Session, *, name: str, label: str, audit: Audit | None = None) -> LabelState:
    """Remove a label (its history stays): requests naming it get a 404, and without `production` the
    default becomes the latest version."""
    row = session.get(PromptLabel, (name, label))
    if row is None:
        raise PromptNotFound(f"Prompt {name!r} has no label {label!r}.", param="label")
    state = _label(row)
    session.add(PromptLabelMove(name=name, label=label, action="delete", weights={}, previous=row.weights))
    session.delete(row)
    session.flush()
    if audit is not None:
        audit(session, state)
    session.commit()
    return state
