"""A target: one planned build with everything the builder needs, resolved from a build id or
from (package, CUDA, Python, platform[, torch][, version]). Both take the matrix's expansion,
made once."""

from __future__ import annotations

import difflib
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from packaging.version import InvalidVersion, Version

from wheelfarm.builder import envs
from wheelfarm.builder.platforms import REPAIRERS
from wheelfarm.core.errors import PlanError
from wheelfarm.core.label import torch_minor
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.expand import Build, Expansion
from wheelfarm.matrix.model import Matrix, Package, PackageVersion, TorchRelease

logger = logging.getLogger(__name__)


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
    farm_requires: tuple[FarmWheel, ...] = ()  # farm wheels the import check installs first
    nvcc_flags: tuple[str, ...] = ()  # farm-wide NVCC_APPEND_FLAGS (its platform's)
    # Its compile (ADR 19): the CUDA of the torch env it compiles against and that torch's
    # index (its compile's CUDA; with pip's own index, the CUDA pip's torch is where it is one
    # of the compile's), and the names of the per-CUDA farm wheels the compile requires where
    # its wheel requires its own CUDA's instead (cumm-cu130 for spconv-cu132).
    compile_env_cuda: str = ""
    compile_index: str = ""
    compiled_requires: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return self.build.id


@dataclass(frozen=True)
class FarmWheel:
    """A wheel of this farm the target's modules import (farm_requires), pinned to the build
    serving the target's own import cell."""

    pin: str  # 'torch-scatter==2.1.2+cu130torch2.14'
    cuda: str
    torch: str  # the torch minor whose index directory lists it
    build_id: str  # the planned build it is: a wheelhouse copy must carry its record
    at_build: bool = False  # farm_build_requires: installed into the build venv as well

    @property
    def requirement(self) -> str:
        """What the dependent wheel's METADATA requires: the version, any cell's build of it."""
        return self.pin.split("+", 1)[0]


def _farm_wheels(
    expansion: Expansion, build: Build, torch: str | None, at_build: tuple[str, ...]
) -> tuple[FarmWheel, ...]:
    """The required builds serving the cell the import check runs in (this build's CUDA,
    platform and Python, beside its torch), by their wheels' own names; those of packages in
    `at_build` the build installs too."""
    out = []
    for required_id in build.requires:
        req = expansion.by_id[required_id]
        for c in req.covers:
            if c.python == build.python and (torch is None or c.torch == torch):
                pin = f"{req.distribution}=={req.version}+{req.label}"
                out.append(
                    FarmWheel(pin, c.cuda, c.torch, req.id, at_build=req.package in at_build)
                )
                break
    return tuple(out)


def _torch_for(
    matrix: Matrix, minors: Iterable[str], *, cuda: str, platform: str, from_pypi: bool
) -> TorchRelease:
    """The torch to install from the minors a build is listed under: the newest, or with
    `from_pypi` (pip's own index, which `build --local` uses) the newest whose PyPI wheel is
    built for `cuda` where torch.yaml records it (PyPI's 2.15.0 is cu132: a cu130 build takes
    2.14.1) and, among those, that this machine's pip cap allows (a pip capped at 2.14.1
    holds those on disk)."""
    releases = [matrix.release(m) for m in minors]
    if not from_pypi:
        return max(releases, key=lambda r: r.version)
    fits = [r for r in releases if r.pypi.get(platform, cuda) == cuda]
    if not fits:
        gives = ", ".join(f"{r.version} is {r.pypi[platform]}" for r in releases)
        msg = (
            f"PyPI's torch is not built for {cuda} on {platform} ({gives}): pass "
            f"--torch-index {matrix.torch_index(cuda)}, or build for the CUDA PyPI gives (--cuda)"
        )
        raise PlanError(msg)
    cap = envs.pip_torch_cap()
    capped = [r for r in fits if cap.contains(str(r.version), prereleases=True)]
    return max(capped or fits, key=lambda r: r.version)


def _target(
    matrix: Matrix, build: Build, expansion: Expansion, *, from_pypi: bool = False
) -> Target:
    package = matrix.package(build.package)
    source = next(v for v in package.versions if str(v.version) == build.version)
    minors = sorted({c.torch for c in build.covers}, key=Version)

    def chosen() -> str:
        return str(
            _torch_for(
                matrix, minors, cuda=build.cuda, platform=build.platform, from_pypi=from_pypi
            ).version
        )

    if build.torch is not None and from_pypi:
        # a stable-ABI build loads into every torch it is listed under: build against one pip gives
        build = replace(build, torch=chosen())
    import_torch = build.torch
    if import_torch is None and package.import_with_torch:
        import_torch = chosen()
    env_cuda = _compile_env_cuda(matrix, build, from_pypi=from_pypi)
    return Target(
        build=build,
        package=package,
        source=source,
        torch_index=matrix.torch_index(build.cuda),
        wheel_platform=matrix.farm.platforms[build.platform].wheel_platform,
        root=matrix.root,
        import_torch=import_torch,
        nvcc_flags=REPAIRERS[build.platform].nvcc_flags(matrix, build),
        farm_requires=_farm_wheels(
            expansion,
            build,
            ".".join(import_torch.split(".")[:2]) if import_torch else None,
            package.farm_build_requires,
        ),
        compile_env_cuda=env_cuda,
        compile_index=matrix.torch_index(env_cuda),
        compiled_requires=tuple(
            matrix.package(r).distribution_for(build.compile_cuda)
            for r in package.farm_requires
            if build.cuda != build.compile_cuda
        ),
    )


def _compile_env_cuda(matrix: Matrix, build: Build, *, from_pypi: bool) -> str:
    """The CUDA of the torch env a build compiles against: its compile's; where torch comes
    from pip's own index, the CUDA of pip's torch of that release if the compile serves it (a
    CUDA 13.0 toolkit compiles against PyPI's cu132 torch 2.15: torch refuses a major only)."""
    if from_pypi and build.torch is not None:
        pypi = matrix.release(torch_minor(build.torch)).pypi.get(build.platform)
        if pypi in build.variants:
            return pypi
    return build.compile_cuda


def resolve(
    matrix: Matrix, expansion: Expansion, build_id: str, *, from_pypi: bool = False
) -> Target:
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
    return _target(matrix, build, expansion, from_pypi=from_pypi)


def resolve_group(
    matrix: Matrix,
    expansion: Expansion,
    group_id: str,
    pythons: Sequence[str] = (),
    variants: Sequence[str] = (),
    *,
    from_pypi: bool = False,
) -> list[Target]:
    """The targets of a group job (`plan`'s group id, docs/adr/0016-python-groups.md), oldest
    Python first: those of `pythons` and CUDA `variants` (ADR 19), or every one of the group."""
    members = sorted(
        (b for b in expansion.builds if b.group_id == group_id),
        key=lambda b: (Version(b.python), b.variants.index(b.cuda)),
    )
    if not members:  # a build's own id
        target = resolve(matrix, expansion, group_id, from_pypi=from_pypi)
        _picked([target.build], "--pythons", pythons, lambda b: b.python, group_id)
        _picked([target.build], "--variants", variants, lambda b: b.cuda, group_id)
        return [target]
    chosen = _picked(members, "--pythons", pythons, lambda b: b.python, group_id)
    chosen = _picked(chosen, "--variants", variants, lambda b: b.cuda, group_id)
    if not from_pypi:
        return [_target(matrix, b, expansion) for b in chosen]
    return _pip_served(matrix, expansion, group_id, chosen)


def _picked(
    builds: list[Build], flag: str, wanted: Sequence[str], key: Callable[[Build], str], job: str
) -> list[Build]:
    """The builds whose `key` (Python, CUDA tag) is `wanted`, all where nothing is; PlanError
    naming each wanted value the job does not build, and what it does."""
    have = list(dict.fromkeys(key(b) for b in builds))
    unknown = [w for w in wanted if w not in have]
    if unknown:
        msg = f"{flag} {' '.join(unknown)}: {job} builds {' '.join(have)}"
        raise PlanError(msg)
    return [b for b in builds if not wanted or key(b) in wanted]


def _pip_served(
    matrix: Matrix, expansion: Expansion, group_id: str, chosen: list[Build]
) -> list[Target]:
    """The group's targets whose torch pip's own index has (a local build of a compile serving
    several CUDA minors: PyPI's torch 2.15 is cu132 only), each minor left out said in a line;
    an error where pip has none of them."""
    out, left = [], []
    for b in chosen:
        try:
            out.append(_target(matrix, b, expansion, from_pypi=True))
        except PlanError as exc:  # noqa: PERF203 - one line per minor pip lacks
            left.append(f"{b.id} ({exc})")
    if not out:
        msg = f"group {group_id}: pip's index has a torch for none of its builds: " + "; ".join(
            left
        )
        raise PlanError(msg)
    for line in left:
        logger.warning("left out, its torch is not on pip's index: %s", line)
    return out


def select(
    matrix: Matrix,
    expansion: Expansion,
    *,
    package: str,
    cuda: str,
    python: str,
    platform: str,
    torch: str | None = None,
    version: str | None = None,
    from_pypi: bool = False,
) -> Target:
    """The build serving (package, cuda, python, platform[, torch][, version]): the newest
    version, then the torch `_torch_for` picks, where unset (`from_pypi`: see there)."""
    pkg = matrix.package(package)
    wanted = _version(pkg, version) if version is not None else None
    found: dict[str, list[Build]] = {}  # torch minor -> the builds serving the cell with it
    for b in expansion.builds:
        if b.package != pkg.name or (wanted is not None and Version(b.version) != wanted):
            continue
        for c in b.covers:
            if (c.cuda, c.python, c.platform) == (cuda, python, platform) and (
                torch is None or c.torch == torch
            ):
                found.setdefault(c.torch, []).append(b)
    if not found:
        of = f"{package!r} {version}" if version else repr(package)
        msg = (
            f"no build of {of} serves {cuda} / torch {torch or 'any'} / Python {python} "
            f"/ {platform}; `wheelfarm plan --package {package} --explain CELL` says why"
        )
        raise PlanError(msg)
    newest = max(Version(b.version) for bs in found.values() for b in bs)
    minors = [m for m, bs in found.items() if any(Version(b.version) == newest for b in bs)]
    if torch is None:
        chosen = _torch_for(matrix, minors, cuda=cuda, platform=platform, from_pypi=from_pypi)
        minors = [chosen.minor]
    best = next(b for b in found[minors[0]] if Version(b.version) == newest)
    if best.python != python and best.python_floor is not None:
        # one wheel for many Pythons whose tag floor is the package's own: any of them builds it,
        # so this machine's Python does (the others may not be installed)
        best = replace(best, python=python)
    return _target(matrix, best, expansion, from_pypi=from_pypi)


def _version(package: Package, given: str) -> Version:
    """The listed version equal (PEP 440) to the one asked for; else an error listing them."""
    listed = ", ".join(str(v.version) for v in package.versions)
    try:
        wanted = Version(given)
    except InvalidVersion:
        msg = f"--package-version {given!r} is not a PEP 440 version; {package.name} lists {listed}"
        raise PlanError(msg) from None
    if not any(v.version == wanted for v in package.versions):
        msg = f"{package.name} lists no version {given!r}: it lists {listed}"
        raise PlanError(msg)
    return wanted
