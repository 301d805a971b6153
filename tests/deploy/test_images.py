"""The images as a user gets them: a small build context, multi-stage builds, no extras in the pins, CPU images
without Triton, unprivileged users."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

DOCKERFILES = ("deploy/Dockerfile.gateway", "deploy/Dockerfile.worker")


def stages(text: str) -> list[str]:
    return re.split(r"^FROM ", text, flags=re.M)[1:]


def test_constraints_pin_names_without_extras(root):
    """pip refuses extras in a constraints file ("Constraints cannot have extras")."""
    pins = [line.split("#")[0].strip() for line in (root / "deploy" / "constraints.txt").read_text().splitlines()]
    pins = [p for p in pins if p]
    assert pins and all(re.fullmatch(r"[A-Za-z0-9._-]+==[0-9][^\s\[\]]*", p) for p in pins), pins


@pytest.mark.parametrize("path", DOCKERFILES)
def test_multi_stage_and_unprivileged(root, path):
    text = (root / path).read_text()
    build, *_, final = stages(text)
    assert " AS build" in build.splitlines()[0]
    assert re.search(r"^COPY --from=(build|worker-venv|gateway-venv) /opt/tollgate /opt/tollgate$", final, flags=re.M)
    assert "pip install" not in final and "pip install" in build  # no pip work (nor its caches) in the image
    users = re.findall(r"^USER (\S+)", final, flags=re.M)
    assert users and users[-1] not in ("root", "0")
    assert "rm -rf /var/lib/apt/lists/*" in final or "apt-get" not in final


def test_both_images_share_the_build_stage(root):
    """Word for word, so the second image's build reuses the first's layers."""
    first, second = ([line for line in stages((root / p).read_text())[0].splitlines() if not line.startswith("#")]
                     for p in DOCKERFILES)
    assert first == second


def test_cpu_images_leave_triton_out(root):
    build = stages((root / DOCKERFILES[0]).read_text())[0]
    assert re.search(r"cpu\)\s+index=https://download.pytorch.org/whl/cpu leave_out=triton", build)
    out = subprocess.run([sys.executable, str(root / "deploy" / "docker" / "requirements.py"),
                          str(root / "pyproject.toml"), "triton"], capture_output=True, text=True, check=True)
    names = [re.split(r"[\s\[<>=!~;]", line, maxsplit=1)[0] for line in out.stdout.splitlines()]
    assert "triton" not in names and "torch" in names and "ray" in names


def test_dockerignore_keeps_the_context_small(root):
    rules = [r for r in (root / ".dockerignore").read_text().splitlines() if r and not r.startswith("#")]
    assert rules[0] == "*"  # everything out, then what the images copy back in
    allowed = {r[1:] for r in rules if r.startswith("!")}
    for leak in (".venv", ".git", "data", ".env", "secrets", "tests"):
        assert leak not in allowed
    for path in DOCKERFILES:
        for line in (root / path).read_text().splitlines():
            if line.startswith("COPY ") and "--from=" not in line:
                for src in line.split()[1:-1]:
                    assert any(src == a or src.startswith(a + "/") or re.fullmatch(a.replace("*", ".*"), src)
                               for a in allowed), f"{path}: {src} is not in the build context"


@pytest.mark.parametrize("script", ["gateway.sh", "ray-head.sh", "ray-worker.sh"])
def test_entrypoints_set_the_object_store_within_shm(root, script):
    assert "--object-store-memory" in (root / "deploy" / "docker" / script).read_text()


def test_cpu_images_carry_no_compiler_and_no_torch_in_the_gateway(root):
    """The worker loads kernels compiled in a build stage (only the CUDA variant installs gcc, for Triton); the
    gateway runs its two models from ONNX files exported in a build stage, without torch."""
    worker = stages((root / DOCKERFILES[1]).read_text())[-1]
    for line in worker.splitlines():
        if "apt-get install" in line and "gcc" in line:
            assert '"$VARIANT" = cuda' in line
    assert "TOLLGATE_KERNEL_PREBUILT=" in worker
    gateway = stages((root / DOCKERFILES[0]).read_text())
    venv = next(s for s in gateway if s.startswith("build AS gateway-venv"))
    assert "gateway.embedding.prebuild" in venv and re.search(r"pip uninstall -y -q torch ", venv)
    assert "TOLLGATE_ONNX_PREBUILT=" in gateway[-1]
