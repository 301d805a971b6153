from __future__ import annotations

import os
import subprocess

import pytest


@pytest.mark.parametrize("script", ["ray-head.sh", "ray-worker.sh", "gateway.sh"])
def test_entrypoints_are_executable_bash(root, script):
    path = root / "deploy" / "docker" / script
    assert os.access(path, os.X_OK)
    out = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
