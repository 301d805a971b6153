"""Serve applications from the catalogue: one application (one deployment) per model version.

Run on a Ray head to deploy the pool for gateways that attach with ray_deploy=False:
    python -m workers.serve.app --catalogue deploy/catalogue.yaml
"""
from __future__ import annotations

import argparse
import re

from ray import serve
from ray.serve.config import ProxyLocation, RequestRouterConfig
from ray.serve.deployment import Application

from gateway.catalogue import Catalogue, load_catalogue
from workers.serve.config import VersionServeConfig
from workers.serve.deployment import VersionServer

PREFIX_ROUTER = "workers.serve.prefix_router:PrefixAffinityRouter"


def app_name(version: str) -> str:
    """A Serve application name for a version ("smollm2-135m-instruct@fp32" -> "tg-smollm2-135m-instruct-fp32")."""
    return "tg-" + re.sub(r"[^A-Za-z0-9_-]", "-", version)


def versions_from_catalogue(catalogue: Catalogue, *, engine_overrides: dict | None = None,
                            versions: list[str] | None = None, **serve_overrides) -> list[VersionServeConfig]:
    """A VersionServeConfig per catalogue version (or the named ones). `engine_overrides` and
    `serve_overrides` (VersionServeConfig fields) let tests and small machines shrink the pool."""
    out = []
    for name in versions if versions is not None else catalogue.version_names():
        _, model, spec = catalogue.version(name)
        r = spec.replicas
        engine = {"model": model.weights, **spec.engine, **(engine_overrides or {})}
        fields = dict(min_replicas=r.min, max_replicas=r.max, standby=r.standby,
                      target_ongoing_requests=r.target_ongoing_requests, upscale_delay_s=r.upscale_delay_s,
                      downscale_delay_s=r.downscale_delay_s, num_cpus=r.num_cpus, num_gpus=r.num_gpus,
                      max_ongoing_requests=engine.get("max_num_seqs", 64),
                      max_queued_requests=r.max_queued_requests)
        out.append(VersionServeConfig(version=name, engine=engine, **{**fields, **serve_overrides}))
    return out


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
        options["request_router_config"] = RequestRouterConfig(request_router_class=PREFIX_ROUTER)
    deployment = serve.deployment(VersionServer).options(**options)
    return deployment.bind(cfg.version, cfg.engine, cfg.warmup_prompt)


def app_builder(args: dict) -> Application:
    """An application builder for Serve config files (KubeRay's serveConfigV2):
    `import_path: workers.serve.app:app_builder`, `args: {catalogue, version, [prefix_routing]}`."""
    missing = {"catalogue", "version"} - set(args)
    if missing:
        raise ValueError(f"app_builder args need {sorted(missing)}")
    [cfg] = versions_from_catalogue(load_catalogue(args["catalogue"]), versions=[args["version"]],
                                    prefix_routing=bool(args.get("prefix_routing", False)))
    return build_app(cfg)


def deploy(configs: list[VersionServeConfig]) -> dict[str, serve.handle.DeploymentHandle]:
    """Deploy (or update in place) every version's application; returns handles by version.
    Blocks until each application's floor of replicas is loaded and warm.
    Serve's own HTTP proxy stays off: the gateway reaches replicas through handles, and the proxy
    would otherwise take port 8000, the gateway's."""
    serve.start(proxy_location=ProxyLocation.Disabled)
    return {cfg.version: serve.run(build_app(cfg), name=app_name(cfg.version), route_prefix=None)
            for cfg in configs}


def main(argv: list[str] | None = None) -> None:
    import ray

    p = argparse.ArgumentParser(description="Deploy Tollgate's model versions on Ray Serve.")
    p.add_argument("--catalogue", required=True)
    p.add_argument("--address", default="auto", help="Ray address to join (default: the local head)")
    p.add_argument("--prefix-routing", action="store_true")
    args = p.parse_args(argv)
    ray.init(address=args.address, namespace="tollgate")
    configs = versions_from_catalogue(load_catalogue(args.catalogue), prefix_routing=args.prefix_routing)
    deploy(configs)
    print(f"deployed {[c.version for c in configs]}", flush=True)


if __name__ == "__main__":
    main()
