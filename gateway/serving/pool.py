"""The catalogue's versions as Ray Serve applications: what the gateway deploys, what a Ray head deploys for
gateways that attach with ray_deploy=False, and what KubeRay's serveConfigV2 builds.

The catalogue is the gateway's (prices, aliases, replicas); the workers take only a VersionServeConfig per
version (workers/serve/app.py), so this translation lives on the gateway's side of the line.

Run on a Ray head to deploy the pool:
    python -m gateway.serving.pool --catalogue deploy/catalogue.yaml
"""
from __future__ import annotations

import argparse

from ray.serve.deployment import Application

from gateway.catalogue import Catalogue, load_catalogue
from workers.serve.app import build_app, deploy
from workers.serve.config import VersionServeConfig


def versions_from_catalogue(catalogue: Catalogue, *, engine_overrides: dict | None = None,
                            versions: list[str] | None = None, **serve_overrides) -> list[VersionServeConfig]:
    """A VersionServeConfig per catalogue version (or the named ones). `engine_overrides` and
    `serve_overrides` (VersionServeConfig fields) let tests and small machines shrink the pool."""
    out = []
    for name in versions if versions is not None else catalogue.pool_version_names():
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


def app_builder(args: dict) -> Application:
    """An application builder for Serve config files (KubeRay's serveConfigV2):
    `import_path: gateway.serving.pool:app_builder`, `args: {catalogue, version, [prefix_routing]}`."""
    missing = {"catalogue", "version"} - set(args)
    if missing:
        raise ValueError(f"app_builder args need {sorted(missing)}")
    [cfg] = versions_from_catalogue(load_catalogue(args["catalogue"]), versions=[args["version"]],
                                    prefix_routing=bool(args.get("prefix_routing", False)))
    return build_app(cfg)


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
