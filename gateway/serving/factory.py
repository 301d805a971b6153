"""Settings.backend -> a ModelBackend. Other backends register themselves in BACKENDS."""
from __future__ import annotations

from collections.abc import Callable

from gateway.catalogue import Catalogue
from gateway.serving.base import ModelBackend
from gateway.settings import Settings


def _inprocess(settings: Settings, catalogue: Catalogue) -> ModelBackend:
    from gateway.serving.inprocess import InProcessBackend  # torch loads only when chosen

    return InProcessBackend(catalogue)


def _ray(settings: Settings, catalogue: Catalogue) -> ModelBackend:
    from gateway.serving.ray_backend import RayServeBackend  # ray loads only when chosen

    return RayServeBackend(settings, catalogue)


BACKENDS: dict[str, Callable[[Settings, Catalogue], ModelBackend]] = {
    "inprocess": _inprocess,
    "ray": _ray,
}


def build_backend(settings: Settings, catalogue: Catalogue) -> ModelBackend:
    try:
        make = BACKENDS[settings.backend]
    except KeyError:
        raise ValueError(f"backend must be one of {sorted(BACKENDS)}, got {settings.backend!r}") from None
    return make(settings, catalogue)
