"""Every OS difference of a build behind one protocol, one module per OS (cibuildwheel's
platforms/): the builder modules ask `current()`, chosen once from sys.platform, and repair asks
the platform a wheel is for (REPAIRERS, keyed by the core platform registry)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from wheelfarm.builder.platforms import linux, windows
from wheelfarm.builder.platforms.common import RepairJob, Views, append_nvcc_flags
from wheelfarm.core.platforms import PLATFORMS, OsName

if TYPE_CHECKING:
    from wheelfarm.matrix.expand import Build
    from wheelfarm.matrix.model import Matrix

__all__ = [
    "LINUX",
    "REPAIRERS",
    "WINDOWS",
    "BuildPlatform",
    "RepairJob",
    "append_nvcc_flags",
    "current",
    "for_os",
]


class BuildPlatform(Protocol):
    """What differs between the OSes the farm builds on; everything else is shared code."""

    @property
    def fakes_driver(self) -> bool:
        """Whether wheels link the driver by file name (`-lcuda`, `libcuda.so.1`), so that
        builder/driver.py stubs it where the toolkit or the machine lacks it."""
        ...

    @property
    def rewrites_arguments(self) -> bool:
        """Whether its compiler wrappers can rewrite arguments, so torch's and Python's headers
        reach every compile through views that name no Python (docs/adr/0016-python-groups.md)."""
        ...

    @property
    def fixed_compiler(self) -> str | None:
        """The host compiler's description where nvcc checks it itself; None where the builder
        checks gcc's version against compat.yaml."""
        ...

    def venv_python(self, venv: Path) -> Path:
        """A venv's interpreter."""
        ...

    def nvcc(self, cuda_home: Path) -> Path:
        """The toolkit's nvcc executable."""
        ...

    def compile_env(self, env: dict[str, str], work: Path) -> dict[str, str]:
        """Variables the compile needs on this OS (added to `env`)."""
        ...

    def compiler_shims(
        self,
        env: dict[str, str],
        ccache: str,
        cuda_home: Path,
        shims: Path,
        base: Path,
        views: Views,
    ) -> dict[str, str]:
        """`env` with ccache in front of the host compiler and nvcc (wrappers made in `shims`),
        each compile reaching the torch env's headers through `views`."""
        ...

    def ninja_shim(self, bin_dir: Path) -> Path:
        """A new folder `bin_dir` holding a `ninja` that runs the compile shard's shim."""
        ...

    def empty_object(self, env: dict[str, str], work: Path) -> Path:
        """A valid object file with nothing in it, made in `work` by the real host compiler."""
        ...

    def husk_link(self, env: dict[str, str]) -> dict[str, str]:
        """Variables that let a compile shard's husk link with stubbed objects."""
        ...

    def pass_through(self, real: str, argv: list[str]) -> int:
        """Run the real ninja for an invocation that is no build; its exit status."""
        ...

    def nvcc_flags(self, matrix: Matrix, build: Build) -> tuple[str, ...]:
        """Farm-wide nvcc flags a build for this OS needs (`append_nvcc_flags` adds them to
        NVCC_APPEND_FLAGS): on Windows compat.yaml's msvc_nvcc_flags for its CUDA major."""
        ...

    def repair(self, job: RepairJob) -> Path:
        """Vendor what the wheel needs except torch/CUDA libraries; return the repaired wheel."""
        ...


LINUX: BuildPlatform = linux.Linux()
WINDOWS: BuildPlatform = windows.Windows()
_BY_OS: dict[OsName, BuildPlatform] = {"linux": LINUX, "windows": WINDOWS}
# the platform table (cibuildwheel's ALL_PLATFORM_MODULES): every OS difference of a build for a
# farm platform is asked of its entry here, never of linux or windows by name
REPAIRERS: dict[str, BuildPlatform] = {name: _BY_OS[p.os] for name, p in PLATFORMS.items()}


def for_os(sys_platform: str) -> BuildPlatform:
    """The platform for a `sys.platform` value: Windows for win32, Linux's POSIX ways else."""
    return WINDOWS if sys_platform == "win32" else LINUX


_CURRENT = for_os(sys.platform)


def current() -> BuildPlatform:
    """This machine's platform."""
    return _CURRENT
