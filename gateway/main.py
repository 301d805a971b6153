"""Builds the app; nothing else."""
from __future__ import annotations

import gc
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from fastapi import FastAPI

from gateway.api import admin, ops, tokenize, v1
from gateway.api.admin.cache import router as admin_cache
from gateway.api.admin.routes import router as admin_routes
from gateway.api.errors import install_error_handlers
from gateway.api.v1.batches import build_runner
from gateway.console import install_console
from gateway.observability.logging import configure_logging
from gateway.observability.middleware import RequestContextMiddleware
from gateway.serving.base import ModelBackend
from gateway.services import Services
from gateway.settings import Settings, get_settings

if TYPE_CHECKING:
    from gateway.embedding import Embedder


def create_app(settings: Settings | None = None, *, backend: ModelBackend | None = None,
               embedder: Embedder | None = None) -> FastAPI:
    settings = settings or get_settings()
    configure_logging(settings.log_level)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        services = Services.build(settings, backend=backend, embedder=embedder)
        await services.start()
        app.state.services, app.state.router = services, services.router
        runner = build_runner(services) if settings.batch_runner_enabled else None
        if runner is not None:
            await runner.start()
        app.state.batch_runner = runner
        # Start-up leaves millions of long-lived objects (model weights' wrappers, tokenizers, the
        # ORM): without this, every full GC walks them all and shows up as a request's p99.
        gc.collect()
        gc.freeze()
        try:
            yield
        finally:
            try:
                if runner is not None:
                    await runner.stop()  # its lines in flight finish first: the drain below waits for no new ones
            finally:
                await services.stop()

    # /docs, /redoc and /openapi.json describe every admin route: off unless the operator turns them on.
    docs = settings.docs_enabled
    app = FastAPI(title="Tollgate", lifespan=lifespan, docs_url="/docs" if docs else None,
                  redoc_url="/redoc" if docs else None, openapi_url="/openapi.json" if docs else None)
    # Uploads have their own, larger cap (the route answers a clear 413 up to it; a little room for the form).
    app.add_middleware(RequestContextMiddleware, max_body_bytes=settings.max_body_bytes,
                       body_limits={"/v1/files": settings.files_max_bytes + 64 * 1024})
    install_error_handlers(app)
    app.include_router(v1.router)
    app.include_router(tokenize.router)
    app.include_router(ops.router)
    app.include_router(admin.router)
    app.include_router(admin_routes)
    app.include_router(admin_cache)
    install_console(app)
    return app
