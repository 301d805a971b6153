"""Building the CPU kernels: cached per source and machine, clear errors, and a PyTorch fallback when they fail."""
import os

import pytest

from workers.kernels import cpu, cpu_build


@pytest.mark.slow  # runs the C compiler (the whole library, or every portable level)
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


@pytest.fixture(scope="module")
def portable(tmp_path_factory):
    if cpu_build.compiler() is None and not os.environ.get("CI"):  # CI has gcc: there these always run
        pytest.skip("no C compiler on this machine")
    out = tmp_path_factory.mktemp("prebuilt")
    return out, cpu_build.prebuild(out)


@pytest.mark.slow  # runs the C compiler (the whole library, or every portable level)
def test_without_a_compiler_the_best_prebuilt_level_this_cpu_runs_is_loaded(portable, monkeypatch):
    out, files = portable
    assert sorted(files) == sorted(out.iterdir()) and "native" not in " ".join(f.name for f in files)
    monkeypatch.setattr(cpu_build.shutil, "which", lambda name: None)
    monkeypatch.setenv(cpu_build.PREBUILT_ENV, str(out))
    levels = cpu_build.PORTABLE[cpu_build.platform.machine()]
    best = next(level for level, needs in levels if needs <= cpu_build._cpu_flags())
    assert cpu_build.build() == out / cpu_build.portable_name(best)
    monkeypatch.setattr(cpu_build, "_cpu_flags", frozenset)  # an old CPU (no flags): the baseline level
    assert cpu_build.build() == out / cpu_build.portable_name(levels[-1][0])


@pytest.mark.slow  # runs the C compiler (the whole library, or every portable level)
def test_a_portable_library_computes_what_the_native_one_does(portable, monkeypatch):
    import ctypes

    import torch

    _, files = portable
    native = cpu.CpuKernels(ctypes.CDLL(str(cpu_build.build())))
    x, weight = torch.randn(5, 64), torch.rand(64) + 0.5
    gate_up = torch.randn(3, 128)
    # The decode attention over scattered blocks: full and partial runs of keys, GQA groups of 3 and 8 (x86-64-v3
    # takes the AVX2 path, which an AVX-512 machine's native build never compiles).
    k_cache, v_cache = torch.randn(2, 3, 12, 16, 64).unbind(0)
    tables, lens = torch.randperm(12)[:8].view(2, 4), torch.tensor([64, 23])
    attention = [(torch.randn(2, 9, 64), 3), (torch.randn(2, 8, 64), 1)]  # (q, KV heads): groups of 3 and 8
    for path in files:
        kernels = cpu.CpuKernels(ctypes.CDLL(str(path)))
        torch.testing.assert_close(kernels.rms_norm(x, weight, 1e-6), native.rms_norm(x, weight, 1e-6))
        torch.testing.assert_close(kernels.silu_mul(gate_up), native.silu_mul(gate_up))
        for q, kv_heads in attention:
            ks, vs = k_cache[:kv_heads], v_cache[:kv_heads]
            torch.testing.assert_close(kernels.paged_decode_attention(q, ks, vs, tables, lens, 0.125),
                                       native.paged_decode_attention(q, ks, vs, tables, lens, 0.125))


def test_a_prebuilt_folder_without_a_library_for_this_cpu_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setattr(cpu_build.shutil, "which", lambda name: None)
    monkeypatch.setenv(cpu_build.PREBUILT_ENV, str(tmp_path))
    with pytest.raises(cpu_build.KernelBuildError, match=cpu_build.PREBUILT_ENV):
        cpu_build.build()


@pytest.mark.slow  # runs the C compiler (the whole library, or every portable level)
def test_prebuilt_libraries_are_readable_by_other_users(portable):
    _, files = portable
    assert all(f.stat().st_mode & 0o005 == 0o005 for f in files)  # the image's user is not the builder
