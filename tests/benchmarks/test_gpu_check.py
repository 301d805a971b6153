"""benchmarks/gpu_check.py cannot rot: its --cpu form (tiny shapes, Triton's interpreter) runs every section
that needs no GPU here, and must pass."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # Triton's interpreter in a process of its own

ROOT = Path(__file__).resolve().parents[2]


def test_gpu_check_passes_on_the_cpu_under_the_interpreter(tmp_path):
    out = tmp_path / "rows.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--cpu", "--json", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = json.loads(out.read_text())
    checks = {r["check"]: r["ok"] for r in rows if "check" in r}
    assert len(checks) >= 12 and all(checks.values())
    assert checks["greedy tokens == transformers"]
    assert any(r.get("figure") == "engine throughput" for r in rows)
