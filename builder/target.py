"""A target: one planned build with everything the builder needs, resolved from a build id or
from (package, CUDA, Python, platform[, torch]). Both take the matrix's expansion, made once."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, replace

from packaging.version import Version

from wheelfarm.core.errors import PlanError
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.expand import Build, Expansion
from wheelfarm.matrix.model import Matrix, Package, PackageVersion


@dataclass(frozen=True, kw_only=True)
class Target:
    """One build plus the package data it came from."""

    build: Build
    package: Package
    source: PackageVersion
    torch_index: str
    wheel_platform: str
    root: FarmRoot  # where the package's patches and path sources live
    import_torch: str | None = None  # the torch verify imports beside; None: none

    @property
    def id(self) -> str:
        return self.build.id


def _target(matrix: Matrix, build: Build) -> Target:
    package = matrix.package(build.package)
    source = next(v for v in package.versions if str(v.version) == build.version)
    import_torch = build.torch
    if import_torch is None and package.import_with_torch:
        newest = max((c.torch for c in build.covers), key=Version)
        import_torch = str(matrix.release(newest).version)
    return Target(
        build=build,
        package=package,
        source=source,
        torch_index=matrix.torch_index(build.cuda),
        wheel_platform=matrix.farm.platforms[build.platform].wheel_platform,
        root=matrix.root,
        import_torch=import_torch,
    )


def resolve(matrix: Matrix, expansion: Expansion, build_id: str) -> Target:
    """The target for a build id printed by `wheelfarm plan`."""
    build = expansion.by_id.get(build_id)
    if build is None:
        hint = difflib.get_close_matches(build_id, list(expansion.by_id), n=1, cutoff=0.8)
        tip = (
            f"; did you mean {hint[0]!r}?"
            if hint
            else "; `wheelfarm plan --format json` lists them"
        )
        msg = f"{build_id!r} is not a build of this matrix{tip}"
        raise PlanError(msg)
    return _target(matrix, build)


def select(
    matrix: Matrix,
    expansion: Expansion,
    *,
    package: str,
    cuda: str,
    python: str,
    platform: str,
    torch: str | None = None,
) -> Target:
    """The build serving (package, cuda, python, platform[, torch]); newest torch when unset."""
    wanted = matrix.package(package).name
    best: Build | None = None
    for b in expansion.builds:
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
    if best.python != python and best.python_floor is not None:
        # one wheel for many Pythons whose tag floor is the package's own: any of them builds it,
        # so this machine's Python does (the others may not be installed)
        best = replace(best, python=python)
    return _target(matrix, best)
