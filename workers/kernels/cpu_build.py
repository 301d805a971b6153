"""Compile the CPU kernels (cpu_ops.c, cpu_qlinear.c, cpu_stack.c) into one shared library for this machine,
once, and cache it.

The library is built with -march=native, so the cache key covers the source, the compiler flags and the
CPU's feature flags: a cache directory shared by different machines never hands one a binary built for
another. Builds are atomic (compile to a temporary name, then rename), so replicas starting together may
all compile but never load a half-written file.

Where there is no compiler (the worker image), portable builds made ahead of time are loaded instead:
    python -m workers.kernels.cpu_build /opt/tollgate/kernels     # one library per ISA level (PORTABLE)
and $TOLLGATE_KERNEL_PREBUILT names that folder; the best level this CPU runs is taken (x86-64-v3 has
AVX2 and FMA, the vector path of cpu_qlinear.c)."""
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

SOURCES = tuple(Path(__file__).with_name(name) for name in ("cpu_ops.c", "cpu_qlinear.c", "cpu_stack.c"))
CFLAGS = ("-O3", "-march=native", "-fopenmp", "-fPIC", "-shared", "-fno-math-errno", "-fno-trapping-math")
CACHE_ENV = "TOLLGATE_KERNEL_CACHE"
PREBUILT_ENV = "TOLLGATE_KERNEL_PREBUILT"
# Per machine architecture, the portable -march levels built ahead of time, best first, each with the CPU
# flags (/proc/cpuinfo) it needs.
PORTABLE: dict[str, tuple[tuple[str, frozenset[str]], ...]] = {
    "x86_64": (("x86-64-v3", frozenset({"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "movbe", "xsave"})),
               ("x86-64", frozenset())),
    "aarch64": (("armv8-a", frozenset()),),
}


class KernelBuildError(RuntimeError):
    pass


def cache_dir() -> Path:
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "tollgate" / "kernels"


def _cpu_flags() -> frozenset[str]:
    parts = _cpu_identity().split(":", 1)
    return frozenset(parts[1].split()) if len(parts) == 2 else frozenset()


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


def portable_flags(level: str) -> tuple[str, ...]:
    return tuple(f"-march={level}" if flag == "-march=native" else flag for flag in CFLAGS)


def portable_name(level: str) -> str:
    """A portable library's file name: its level and a key of the sources and flags (not of any CPU)."""
    key = hashlib.sha256()
    for part in (*(src.read_bytes() for src in SOURCES), " ".join(portable_flags(level)).encode()):
        key.update(part)
        key.update(b"\0")
    return f"tollgate_cpu_ops-{level}-{key.hexdigest()[:16]}.so"


def prebuilt_library() -> Path | None:
    """The best portable library in $TOLLGATE_KERNEL_PREBUILT that this CPU runs (built from these sources)."""
    folder = os.environ.get(PREBUILT_ENV)
    if not folder:
        return None
    flags = _cpu_flags()
    for level, needs in PORTABLE.get(platform.machine(), ()):
        path = Path(folder) / portable_name(level)
        if needs <= flags and path.is_file():
            return path
    return None


def prebuild(out: Path, cc: str | None = None) -> list[Path]:
    """Compile one portable library per level of this machine's architecture into `out`."""
    cc = cc or compiler()
    if cc is None:
        raise KernelBuildError("no C compiler found (tried $CC, cc, gcc, clang)")
    levels = PORTABLE.get(platform.machine())
    if not levels:
        raise KernelBuildError(f"no portable levels known for {platform.machine()}")
    return [_compile(cc, portable_flags(level), Path(out) / portable_name(level)) for level, _ in levels]


def build() -> Path:
    """Path to the compiled library, compiling it if this machine has none yet; without a compiler, the
    prebuilt portable one. KernelBuildError if there is neither."""
    cc = compiler()
    if cc is None:
        prebuilt = prebuilt_library()
        if prebuilt is not None:
            return prebuilt
        raise KernelBuildError(f"no C compiler found (tried $CC, cc, gcc, clang) and no prebuilt library for "
                               f"this CPU in ${PREBUILT_ENV}")
    target = library_path(cc)
    if target.is_file():
        return target
    return _compile(cc, CFLAGS, target)


def _compile(cc: str, flags: tuple[str, ...], target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=target.parent)
    os.close(fd)
    cmd = [cc, *flags, "-o", tmp, *(str(src) for src in SOURCES), "-lm"]
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
        if result.returncode != 0:
            raise KernelBuildError(f"{' '.join(cmd)} failed:\n{result.stderr.strip()}")
        os.chmod(tmp, 0o755)  # mkstemp's 0600 would keep a prebuilt folder's libraries from other users
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    log.info("compiled CPU kernels into %s", target)
    return target


if __name__ == "__main__":
    import sys

    if len(sys.argv) != 2:
        sys.exit("usage: python -m workers.kernels.cpu_build OUT_DIR")
    for path in prebuild(Path(sys.argv[1])):
        print(path)
