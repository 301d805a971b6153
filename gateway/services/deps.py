"""The dependencies the API and the console share: the one typed services container, a DB session, the Router,
and the client address the server trusts."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from gateway.routing.router import Router
from gateway.services import Services


async def get_services(request: Request) -> Services:
    # async on purpose: FastAPI runs a plain `def` dependency in a worker thread, a hop per request.
    return request.app.state.services


ServicesDep = Annotated[Services, Depends(get_services)]


def get_session(services: ServicesDep) -> Iterator[Session]:
    with services.database.session() as session:
        yield session


SessionDep = Annotated[Session, Depends(get_session)]


def get_router(request: Request) -> Router:
    """The app's Router (`app.state.router`, set where the app is built)."""
    return request.app.state.router


RouterDep = Annotated[Router, Depends(get_router)]


def client_address(request: Request) -> str:
    """The address the server trusts: uvicorn's, which follows X-Forwarded-For only from the proxies in
    TOLLGATE_FORWARDED_ALLOW_IPS."""
    return request.client.host if request.client else "unknown"
