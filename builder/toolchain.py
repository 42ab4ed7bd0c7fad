"""Find and check the CUDA toolkit and host compiler for a target; assemble a CUDA 13 toolkit
from NVIDIA's PyPI wheels when none is installed (facts.md section 5)."""

from __future__ import annotations

import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from packaging.version import Version

from wheelfarm.builder.platforms import current
from wheelfarm.core.errors import ToolchainError
from wheelfarm.core.label import cuda_tag, cuda_version
from wheelfarm.core.proc import Runner, call
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.toolkits import gcc_max

_NVCC_RELEASE = re.compile(r"release (\d+\.\d+), V(\d+\.\d+\.\d+)")
# NVIDIA's CUDA 13 PyPI wheels that together form a working nvcc (CUDA 12 wheels carry no nvcc).
PYPI_TOOLKIT = (
    "nvidia-cuda-nvcc",
    "nvidia-cuda-cccl",
    "nvidia-cuda-runtime",
    "nvidia-cuda-crt",
    "nvidia-nvvm",
)


@dataclass(frozen=True)
class Toolchain:
    """A checked toolkit: where it is and what it reports."""

    cuda_home: Path
    nvcc: Path
    version: Version  # full, e.g. 13.0.88
    compiler: str

    @property
    def tag(self) -> str:
        return f"cu{self.version.major}{self.version.minor}"


def nvcc_version(text: str) -> Version:
    """Parse `nvcc --version` output.

    >>> str(nvcc_version("Cuda compilation tools, release 13.0, V13.0.88"))
    '13.0.88'
    """
    match = _NVCC_RELEASE.search(text)
    if match is None:
        msg = f"cannot read the CUDA version from `nvcc --version` output: {text.strip()[-200:]!r}"
        raise ToolchainError(msg)
    return Version(match.group(2))


def find_cuda_home(env: dict[str, str]) -> Path | None:
    """CUDA_HOME, then CUDA_PATH, then the folder above nvcc on PATH (resolving wrappers)."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if env.get(var) and (Path(env[var]) / "bin").is_dir():
            return Path(env[var])
    nvcc = shutil.which("nvcc", path=env.get("PATH"))
    if nvcc is not None:
        real = Path(nvcc).resolve().parent.parent
        if (real / "include" / "cuda_runtime.h").is_file():
            return real
    default = Path("/usr/local/cuda")
    return default if (default / "bin" / "nvcc").is_file() else None


def check_compiler(
    cuda: Version, env: dict[str, str], limit: int | None, *, run: Runner = call
) -> str:
    """The host compiler's version line; refuse a gcc newer than `limit`, the newest major this
    toolkit accepts (compat.yaml), before a long build fails on it."""
    if (fixed := current().fixed_compiler) is not None:
        return fixed
    cxx = env.get("CXX", "c++")
    text = run([cxx, "--version"], env=env, capture=True)
    first = text.splitlines()[0] if text else cxx
    match = re.search(r"\(GCC\)|gcc|g\+\+", first)
    ver = re.search(r"(\d+)\.\d+\.\d+", first)
    if match and ver and limit is not None and int(ver.group(1)) > limit:
        msg = (
            f"{first!r}: CUDA {cuda.major}.{cuda.minor} accepts gcc <= {limit} (compat.yaml); "
            f"set CXX/CC to an older gcc (e.g. gcc-toolset-{limit} in manylinux)"
        )
        raise ToolchainError(msg)
    return first


def assemble_from_pypi(cuda: str, dest: Path, log: Path, *, run: Runner = call) -> Path:
    """Install NVIDIA's CUDA 13 toolkit wheels into `dest`; return the CUDA_HOME they form."""
    version = cuda_version(cuda)
    if version.major < 13:  # noqa: PLR2004
        msg = (
            f"no CUDA toolkit found and {cuda} cannot be assembled from PyPI (CUDA 12 wheels "
            f"carry no nvcc); install it (scripts/install-cuda-linux.sh) or set CUDA_HOME"
        )
        raise ToolchainError(msg)
    spec = f"=={version.major}.{version.minor}.*"
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--target",
            dest,
            *(f"{name}{spec}" for name in PYPI_TOOLKIT),
        ],
        log=log,
    )
    home = dest / "nvidia" / f"cu{version.major}"
    lib64 = home / "lib64"
    if not lib64.exists():
        lib64.symlink_to("lib")
    return home


def _nvcc(home: Path, env: dict[str, str], run: Runner) -> tuple[Path, Version]:
    nvcc = current().nvcc(home)
    return nvcc, nvcc_version(run([nvcc, "--version"], env=env, capture=True))


def installed_cuda_tag(env: dict[str, str], *, run: Runner = call) -> str:
    """The CUDA tag of the toolkit this machine has (local builds default to it)."""
    home = find_cuda_home(env)
    if home is None:
        msg = "no CUDA toolkit found (CUDA_HOME, CUDA_PATH, nvcc on PATH); pass --cuda"
        raise ToolchainError(msg)
    return cuda_tag(_nvcc(home, env, run)[1])


def detect(
    cuda: str, env: dict[str, str], *, work: Path, log: Path, root: FarmRoot, run: Runner = call
) -> Toolchain:
    """Find the toolkit (or assemble a CUDA 13 one from PyPI), check it serves `cuda` (torch
    refuses another major) and the host compiler against the farm root's compat.yaml."""
    home = find_cuda_home(env) or assemble_from_pypi(cuda, work / "cuda-toolkit", log, run=run)
    nvcc, version = _nvcc(home, env, run)
    wanted = cuda_version(cuda)
    if version.major != wanted.major:
        msg = (
            f"target needs CUDA {wanted} but {nvcc} is CUDA {version}; torch refuses a "
            f"different CUDA major: point CUDA_HOME at a {wanted.major}.x toolkit"
        )
        raise ToolchainError(msg)
    compiler = check_compiler(
        version,
        {**env, "PATH": f"{home / 'bin'}{os.pathsep}{env.get('PATH', '')}"},
        gcc_max(root, version),
        run=run,
    )
    return Toolchain(home, nvcc, version, compiler)
