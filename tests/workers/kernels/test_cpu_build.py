"""Building the CPU kernels: cached per source and machine, clear errors, and a PyTorch fallback when they fail."""
import os

import pytest

from workers.kernels import cpu, cpu_build


def test_build_is_cached_and_keyed_by_the_sources(tmp_path, monkeypatch):
    if cpu_build.compiler() is None and not os.environ.get("CI"):  # CI has gcc: there these always run
        pytest.skip("no C compiler on this machine")
    monkeypatch.setenv(cpu_build.CACHE_ENV, str(tmp_path))
    first = cpu_build.build()
    assert first.parent == tmp_path and first.is_file()
    mtime = first.stat().st_mtime_ns
    assert cpu_build.build() == first and first.stat().st_mtime_ns == mtime  # reused, not rebuilt

    edited = tmp_path / "src" / "cpu_ops.c"
    edited.parent.mkdir()
    edited.write_text(cpu_build.SOURCES[0].read_text() + "\n/* edited */\n")
    monkeypatch.setattr(cpu_build, "SOURCES", (edited, *cpu_build.SOURCES[1:]))
    assert cpu_build.library_path(cpu_build.compiler()) != first


def test_compile_errors_are_reported_and_leave_nothing_behind(tmp_path, monkeypatch):
    if cpu_build.compiler() is None and not os.environ.get("CI"):  # CI has gcc: there these always run
        pytest.skip("no C compiler on this machine")
    monkeypatch.setenv(cpu_build.CACHE_ENV, str(tmp_path / "cache"))
    broken = tmp_path / "broken.c"
    broken.write_text("this is not C;\n")
    monkeypatch.setattr(cpu_build, "SOURCES", (broken,))
    with pytest.raises(cpu_build.KernelBuildError, match=r"broken.c"):
        cpu_build.build()
    assert list((tmp_path / "cache").iterdir()) == []


def test_no_compiler_means_the_pytorch_path(monkeypatch):
    monkeypatch.setattr(cpu_build.shutil, "which", lambda name: None)
    with pytest.raises(cpu_build.KernelBuildError, match="no C compiler"):
        cpu_build.build()
    monkeypatch.setattr(cpu, "build", cpu_build.build)
    assert cpu.load.__wrapped__() is None


def test_kernels_can_be_switched_off(monkeypatch):
    monkeypatch.setenv(cpu.DISABLE_ENV, "0")
    assert cpu.load.__wrapped__() is None
