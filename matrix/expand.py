"""Expand packages into cells (package x version x torch x CUDA x Python x platform) and collapse
cells into builds by ABI kind. See docs/adr/0003-abi-collapse.md."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import cache, cached_property

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from wheelfarm.core.label import Label, cuda_version
from wheelfarm.matrix.model import (
    AbiKind,
    ArchList,
    Exclusion,
    Matrix,
    Package,
    PackageVersion,
    TorchRelease,
)
from wheelfarm.matrix.toolkits import support

# why a cell's runner cannot build (cuda, python, platform); None when it can
Blocker = Callable[[str, str, str], str | None]


@dataclass(frozen=True, kw_only=True, order=True)
class Cell:
    """One combination a user can ask for: the unit the index serves."""

    package: str
    version: str
    torch: str  # minor, e.g. "2.14"
    cuda: str  # tag, e.g. "cu130"
    python: str  # e.g. "3.12"
    platform: str

    @property
    def id(self) -> str:
        """Stable identifier, e.g. 'flash-attn-2.8.3-cu130-torch2.14-cp312-linux_x86_64'."""
        return (
            f"{self.package}-{self.version}-{self.cuda}-torch{self.torch}-"
            f"cp{self.python.replace('.', '')}-{self.platform}"
        )


def python_tag(abi: AbiKind, python: str, *, abi3: bool = False) -> str:
    """'cp312', or 'cp310-abi3' for a limited-API build whose floor is 3.10."""
    tag = f"cp{python.replace('.', '')}"
    return f"{tag}-abi3" if abi == "abi3" or abi3 else tag


@dataclass(frozen=True, kw_only=True)
class Build:
    """One wheel to compile, with every cell it serves."""

    package: str
    version: str
    abi: AbiKind
    cuda: str
    torch: str | None  # full torch version to build against; None for torch-free
    python: str
    platform: str
    archs: ArchList
    covers: tuple[Cell, ...]
    minutes: float
    python_abi3: bool = False

    @property
    def torch_minor(self) -> str | None:
        return None if self.torch is None else ".".join(self.torch.split(".")[:2])

    @property
    def label(self) -> str:
        """The local version label (docs/adr/0002-local-version-label.md)."""
        if self.abi == "torch-free":
            return str(Label(self.cuda))
        return str(Label(self.cuda, self.torch_minor, stable=self.abi == "torch-stable"))

    @property
    def python_tag(self) -> str:
        return python_tag(self.abi, self.python, abi3=self.python_abi3)

    @property
    def id(self) -> str:
        """Stable identifier, e.g. 'flash-attn-2.8.3-cu130torch2.14-cp312-linux_x86_64'."""
        return f"{self.package}-{self.version}-{self.label}-{self.python_tag}-{self.platform}"


@dataclass(frozen=True)
class Excluded:
    """A cell that exists in torch's grid but a rule removed, with the rule for --explain."""

    cell: Cell
    rule: str


def _matches(
    ex: Exclusion, pv: PackageVersion, release: TorchRelease, cuda: str, python: str, platform: str
) -> bool:
    pairs = (
        (ex.version, str(pv.version)),
        (ex.torch, release.minor),
        (ex.cuda, cuda),
        (ex.python, python),
        (ex.platform, platform),
    )
    return all(want is None or fnmatchcase(have, want) for want, have in pairs)


def _rule_finder(pkg: Package) -> Callable[[TorchRelease, str, str, str], str | None]:
    """Which package constraint removes a cell, if any (for --explain); memoised per axis value
    because a large grid asks the same question tens of thousands of times."""
    where = pkg.file.name

    def spec_rule(
        axis: str, spec: SpecifierSet, as_version: Callable[[str], Version]
    ) -> Callable[[str], str | None]:
        @cache
        def rule(value: str) -> str | None:
            return None if as_version(value) in spec else f"{where}: constraints.{axis} {spec}"

        return rule

    torch_rule = spec_rule("torch", pkg.torch_spec, Version)
    python_rule = spec_rule("python", pkg.python_spec, Version)
    cuda_rule = spec_rule("cuda", pkg.cuda_spec, cuda_version)
    platform_rule = f"{where}: constraints.platforms {list(pkg.platforms)}"

    def find(release: TorchRelease, cuda: str, python: str, platform: str) -> str | None:
        return (
            torch_rule(release.minor)
            or python_rule(python)
            or cuda_rule(cuda)
            or (None if platform in pkg.platforms else platform_rule)
        )

    return find


def cells(matrix: Matrix, package: Package, blocker: Blocker) -> Iterator[Cell | Excluded]:
    """Every cell torch ships for this package: kept cells, and excluded ones with their rule
    (the package's constraints and exclusions first, then what its runner cannot build)."""
    rule_for = _rule_finder(package)
    for pv in package.versions:
        version = str(pv.version)
        for release in matrix.releases:
            pythons = release.pythons()
            for cuda, plats in release.builds.items():
                for platform in plats:
                    for python in pythons:
                        cell = Cell(
                            package=package.name,
                            version=version,
                            torch=release.minor,
                            cuda=cuda,
                            python=python,
                            platform=platform,
                        )
                        rule = rule_for(release, cuda, python, platform)
                        if rule is None and package.exclusions:
                            rule = next(
                                (
                                    f"{package.file.name}:{ex.line}: exclude ({ex.reason})"
                                    for ex in package.exclusions
                                    if _matches(ex, pv, release, cuda, python, platform)
                                ),
                                None,
                            )
                        if rule is None and (reason := blocker(cuda, python, platform)):
                            rule = f"its runner: {reason}"
                        yield cell if rule is None else Excluded(cell, rule)


def _collapse_key(abi: AbiKind, cell: Cell, *, python_abi3: bool) -> tuple[str, ...]:
    base = (cell.package, cell.version, cell.cuda, cell.platform)
    if abi == "cpython":
        return (*base, cell.torch, cell.python)
    if abi == "abi3":
        return (*base, cell.torch)
    if abi == "torch-stable":
        return base if python_abi3 else (*base, cell.python)
    return (*base, cell.python)  # torch-free


def builds(matrix: Matrix, package: Package, kept: list[Cell]) -> list[Build]:
    """Collapse cells into builds: abi3 once per (torch, CUDA, platform), torch-stable once per
    (CUDA, platform[, Python]) against the lowest torch, torch-free once per (CUDA, Python,
    platform). A build is compiled with the lowest Python and torch of the cells it covers."""
    groups: dict[tuple[str, ...], list[Cell]] = {}
    for cell in kept:
        key = _collapse_key(package.abi, cell, python_abi3=package.python_abi3)
        groups.setdefault(key, []).append(cell)
    releases = {r.minor: r for r in matrix.releases}
    out = []
    for covers in groups.values():
        first = min(covers, key=lambda c: (Version(c.torch), Version(c.python)))
        archs = matrix.arch.for_target(package, first.cuda, first.platform)
        torch = None if package.abi == "torch-free" else str(releases[first.torch].version)
        out.append(
            Build(
                package=package.name,
                version=first.version,
                abi=package.abi,
                cuda=first.cuda,
                torch=torch,
                python=first.python,
                platform=first.platform,
                archs=archs,
                covers=tuple(sorted(covers)),
                python_abi3=package.python_abi3,
                minutes=package.build_minutes_per_arch * len(archs.archs),
            )
        )
    return out


@dataclass(frozen=True)
class Expansion:
    """All cells, exclusions and builds of a matrix."""

    cells: tuple[Cell, ...]
    excluded: tuple[Excluded, ...]
    builds: tuple[Build, ...]

    @cached_property
    def by_id(self) -> dict[str, Build]:
        """Builds by id, made once: resolving many ids never re-expands the grid."""
        return {b.id: b for b in self.builds}


def expand(matrix: Matrix) -> Expansion:
    """Expand every package; torch-stable drops cells below its minimum torch first, and no cell
    its runner cannot build is kept (matrix/toolkits.py)."""
    blocker = cache(support(matrix.root, matrix.farm).blocker)
    all_cells: list[Cell] = []
    excluded: list[Excluded] = []
    all_builds: list[Build] = []
    for package in matrix.packages:
        kept: list[Cell] = []
        for item in cells(matrix, package, blocker):
            if isinstance(item, Excluded):
                excluded.append(item)
            elif (
                package.abi == "torch-stable"
                and package.min_torch is not None
                and Version(item.torch) < Version(package.min_torch)
            ):
                excluded.append(
                    Excluded(
                        item,
                        f"{package.file.name}: abi.min_torch "
                        f"{package.min_torch} (stable ABI floor)",
                    )
                )
            else:
                kept.append(item)
        all_cells.extend(kept)
        all_builds.extend(builds(matrix, package, kept))
    return Expansion(tuple(all_cells), tuple(excluded), tuple(all_builds))
