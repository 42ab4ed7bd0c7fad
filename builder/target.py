"""A target: one planned build with everything the builder needs, resolved from a build id,
from flags, or from this machine (local mode)."""

from __future__ import annotations

import difflib
import platform as host_platform
import sys
from dataclasses import dataclass

from packaging.version import Version

from wheelfarm.errors import PlanError
from wheelfarm.matrix.expand import Build, expand
from wheelfarm.matrix.model import Matrix, Package, PackageVersion


@dataclass(frozen=True, kw_only=True)
class Target:
    """One build plus the package data it came from."""

    build: Build
    package: Package
    source: PackageVersion
    torch_index: str
    wheel_platform: str

    @property
    def id(self) -> str:
        return self.build.id


def host_platform_name() -> str:
    """This machine as a farm platform name."""
    if sys.platform == "win32":
        return "win_amd64"
    machine = host_platform.machine().lower()
    return f"linux_{'aarch64' if machine in ('aarch64', 'arm64') else 'x86_64'}"


def _target(matrix: Matrix, build: Build) -> Target:
    package = matrix.package(build.package)
    source = next(v for v in package.versions if str(v.version) == build.version)
    return Target(
        build=build,
        package=package,
        source=source,
        torch_index=matrix.torch_index(build.cuda),
        wheel_platform=matrix.farm.platforms[build.platform].wheel_platform,
    )


def resolve(matrix: Matrix, build_id: str) -> Target:
    """The target for a build id printed by `wheelfarm plan`."""
    builds = {b.id: b for b in expand(matrix).builds}
    if build_id not in builds:
        hint = difflib.get_close_matches(build_id, list(builds), n=1, cutoff=0.8)
        tip = (
            f"; did you mean {hint[0]!r}?"
            if hint
            else "; `wheelfarm plan --format json` lists them"
        )
        msg = f"{build_id!r} is not a build of this matrix{tip}"
        raise PlanError(msg)
    return _target(matrix, builds[build_id])


def select(
    matrix: Matrix, *, package: str, cuda: str, python: str, platform: str, torch: str | None = None
) -> Target:
    """The build serving (package, cuda, python, platform[, torch]); newest torch when unset."""
    wanted = matrix.package(package).name
    best: Build | None = None
    for b in expand(matrix).builds:
        for c in b.covers:
            if (c.package, c.cuda, c.python, c.platform) == (wanted, cuda, python, platform) and (
                torch is None or c.torch == torch
            ):
                key = Version(c.torch)
                if best is None or key > max(Version(x.torch) for x in best.covers):
                    best = b
    if best is None:
        msg = (
            f"no build of {package!r} serves {cuda} / torch {torch or 'any'} / Python {python} "
            f"/ {platform}; `wheelfarm plan --package {package} --explain CELL` says why"
        )
        raise PlanError(msg)
    return _target(matrix, best)
