"""Compile the CPU kernels (cpu_ops.c, cpu_qlinear.c) into one shared library for this machine, once, and cache it.

The library is built with -march=native, so the cache key covers the source, the compiler flags and the
CPU's feature flags: a cache directory shared by different machines never hands one a binary built for
another. Builds are atomic (compile to a temporary name, then rename), so replicas starting together may
all compile but never load a half-written file."""
from __future__ import annotations

import hashlib
import logging
import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)

SOURCES = tuple(Path(__file__).with_name(name) for name in ("cpu_ops.c", "cpu_qlinear.c"))
CFLAGS = ("-O3", "-march=native", "-fopenmp", "-fPIC", "-shared", "-fno-math-errno", "-fno-trapping-math")
CACHE_ENV = "TOLLGATE_KERNEL_CACHE"


class KernelBuildError(RuntimeError):
    pass


def cache_dir() -> Path:
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "tollgate" / "kernels"


def _cpu_identity() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return line
    except OSError:
        pass
    return platform.processor()


def compiler() -> str | None:
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return name
    return None


def library_path(cc: str) -> Path:
    key = hashlib.sha256()
    for part in (*(src.read_bytes() for src in SOURCES), " ".join(CFLAGS).encode(), cc.encode(),
                 platform.machine().encode(), _cpu_identity().encode()):
        key.update(part)
        key.update(b"\0")
    return cache_dir() / f"tollgate_cpu_ops-{key.hexdigest()[:16]}.so"


def build() -> Path:
    """Path to the compiled library, compiling it if this machine has none yet. KernelBuildError if it can't."""
    cc = compiler()
    if cc is None:
        raise KernelBuildError("no C compiler found (tried $CC, cc, gcc, clang)")
    target = library_path(cc)
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=target.parent)
    os.close(fd)
    cmd = [cc, *CFLAGS, "-o", tmp, *(str(src) for src in SOURCES), "-lm"]
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if result.returncode != 0:
            raise KernelBuildError(f"{' '.join(cmd)} failed:\n{result.stderr.strip()}")
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    log.info("compiled CPU kernels into %s", target)
    return target
