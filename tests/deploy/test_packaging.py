"""An installed gateway finds its migrations and default catalogue as package data, not beside a checkout."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json
from gateway.db.migrate import scripts_dir
from gateway.settings import Settings
s = Settings()
print(json.dumps({"migrations": str(scripts_dir()), "catalogue": str(s.catalogue),
                  "versions": sorted(p.name for p in (scripts_dir() / "versions").glob("*.py")),
                  "classifier": (s.catalogue.parent / "routing" / "tasks.jsonl").is_file()}))
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The project built as a wheel and installed into an empty folder (as `pip install .` does in the images)."""
    out = tmp_path_factory.mktemp("wheel")
    wheel = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                            "-w", str(out / "dist"), str(ROOT)], capture_output=True, text=True, timeout=120,
                           cwd=out)
    assert wheel.returncode == 0, wheel.stderr
    target = out / "site"
    install = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
                              *map(str, (out / "dist").glob("*.whl"))], capture_output=True, text=True, timeout=120)
    assert install.returncode == 0, install.stderr
    return target


@pytest.mark.slow  # builds and installs a wheel
def test_resources_resolve_inside_the_installed_package(installed, root, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOLLGATE_") and k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, env={**env, "PYTHONPATH": str(installed)},
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    import json
    found = json.loads(out.stdout)
    assert found["migrations"] == str(installed / "gateway" / "db" / "migrations")
    assert found["catalogue"] == str(installed / "gateway" / "deploy" / "catalogue.yaml")
    assert found["versions"] == sorted(p.name for p in (root / "migrations" / "versions").glob("*.py"))
    assert found["classifier"]  # routing/tasks.jsonl, read beside the catalogue
    assert not (installed / "gateway" / "deploy" / "k8s").exists()


def test_a_checkout_resolves_to_its_own_files(root):
    from gateway.db.migrate import scripts_dir
    from gateway.settings import packaged_catalogue

    assert scripts_dir() == (root / "migrations").resolve()
    assert packaged_catalogue() == (root / "deploy" / "catalogue.yaml").resolve()
