"""Build the gateway's Router from Settings: the rollback policy, where routes persist, the task classes."""
from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.orm import Session

from gateway.catalogue import Catalogue
from gateway.db.database import Database
from gateway.routing.canary import RollbackPolicy
from gateway.routing.classifier import ClassifierConfig, labels_of, load_examples
from gateway.routing.router import Router
from gateway.routing.sql_store import SqlRouteStore
from gateway.routing.store import AuditEntry
from gateway.settings import Settings


def rollback_policy(settings: Settings) -> RollbackPolicy:
    return RollbackPolicy(enabled=settings.route_rollback_enabled, window_s=settings.route_rollback_window_s,
                          min_samples=settings.route_rollback_min_samples,
                          error_rate_margin=settings.route_rollback_error_margin,
                          ttft_p99_margin=settings.route_rollback_ttft_margin)


def classifier_config(settings: Settings, catalogue: Catalogue) -> ClassifierConfig | None:
    """The catalogue's task classifier, its file read beside the catalogue when relative; None without one."""
    spec = catalogue.routing.classifier
    if spec is None:
        return None
    return ClassifierConfig(file=settings.catalogue.parent / spec.file, threshold=spec.threshold)


def build_router(settings: Settings, catalogue: Catalogue, db: Database, *,
                 on_save: Callable[[Session, AuditEntry], object] | None = None) -> Router:
    """Routes persist in the gateway database (migrations 0002 and 0014 create the tables); `on_save` runs in
    each change's transaction (SqlRouteStore). The task classes come from the labelled file alone (cheap), so
    persisted task rules validate before the embedder loads."""
    config = classifier_config(settings, catalogue)
    labels = labels_of(load_examples(config.file)) if config is not None else ()
    return Router(catalogue, store=SqlRouteStore(db, on_save=on_save), rollback=rollback_policy(settings),
                  task_labels=labels)
