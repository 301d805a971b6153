"""Serve applications: one application (one deployment) per model version, each from its VersionServeConfig.
(The catalogue's versions become configs on the gateway's side: gateway/serving/pool.py.)"""
from __future__ import annotations

import re

from ray import serve
from ray.serve.config import ProxyLocation, RequestRouterConfig
from ray.serve.deployment import Application

from workers.serve.config import VersionServeConfig
from workers.serve.deployment import VersionServer

PREFIX_ROUTER = "workers.serve.prefix_router:PrefixAffinityRouter"


def app_name(version: str) -> str:
    """A Serve application name for a version ("smollm2-135m-instruct@fp32" -> "tg-smollm2-135m-instruct-fp32")."""
    return "tg-" + re.sub(r"[^A-Za-z0-9_-]", "-", version)


def build_app(cfg: VersionServeConfig) -> Application:
    options: dict = {
        "name": "VersionServer",
        "autoscaling_config": cfg.autoscaling_config(),
        "max_ongoing_requests": cfg.max_ongoing_requests,
        "max_queued_requests": cfg.max_queued_requests,
        "health_check_period_s": cfg.health_check_period_s,
        "health_check_timeout_s": cfg.health_check_timeout_s,
        "ray_actor_options": cfg.actor_options(),
        # One log line per token-stream call drowns everything else; the gateway logs requests.
        "logging_config": {"enable_access_log": False},
    }
    if cfg.prefix_routing:
        # Ray takes the router as an import path; its annotations do not say so.
        options["request_router_config"] = RequestRouterConfig(request_router_class=PREFIX_ROUTER)  # type: ignore[arg-type]
    deployment = serve.deployment(VersionServer).options(**options)  # type: ignore[attr-defined]  # (Ray's overloads)
    return deployment.bind(cfg.version, cfg.engine, cfg.warmup_prompt, cfg.warmup_streams)


def deploy(configs: list[VersionServeConfig]) -> dict[str, serve.handle.DeploymentHandle]:
    """Deploy (or update in place) every version's application; returns handles by version.
    Blocks until each application's floor of replicas is loaded and warm.
    Serve's own HTTP proxy stays off: the gateway reaches replicas through handles, and the proxy
    would otherwise take port 8000, the gateway's."""
    serve.start(proxy_location=ProxyLocation.Disabled)
    return {cfg.version: serve.run(build_app(cfg), name=app_name(cfg.version), route_prefix=None)
            for cfg in configs}

