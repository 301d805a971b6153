"""Every Triton kernel compiles for the H200 (sm_90) at the tiles its launcher picks on a GPU, checked without
one: compile_sm90.py compiles them ahead of time. It runs in a process of its own, since this one has triton's
interpreter on (tests/conftest.py) and triton.jit reads that once, at import."""
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).with_name("compile_sm90.py")


def test_every_kernel_compiles_for_sm90():
    # About a minute on two idle cores with an empty triton cache, seconds with a warm one.
    result = subprocess.run([sys.executable, str(SCRIPT)], env={**os.environ, "TRITON_INTERPRET": "0"},
                            capture_output=True, text=True, timeout=900)
    print(result.stdout)  # a line per kernel: shown when the test fails, or with -s
    failures = [line for line in result.stdout.splitlines() if not line.startswith("ok")]
    assert result.returncode == 0, "\n".join(failures) + "\n" + result.stderr[-4000:]
