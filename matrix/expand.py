"""Expand packages into cells (package x version x torch x CUDA x Python x platform) and collapse
cells into builds by ABI kind. See docs/adr/0003-abi-collapse.md."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from functools import cache, cached_property, lru_cache

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from wheelfarm.core import gcpause
from wheelfarm.core.errors import PlanError
from wheelfarm.core.label import Label, cuda_version, parsed, torch_minor
from wheelfarm.matrix.majors import Compile, Draft, compile_once_per_major, estimate
from wheelfarm.matrix.model import (
    Abi,
    AbiKind,
    ArchList,
    Exclusion,
    Matrix,
    Package,
    PackageVersion,
    PythonAbi,
    TorchRelease,
    python_tag,
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
    distribution: str  # the wheel's own name: the package's, or its per-CUDA one (spconv-cu130)
    python_abi: PythonAbi = "cpython"
    python_floor: str | None = None  # the floor an abi3 / none tag carries; None: `python`
    requires: tuple[str, ...] = ()  # ids of the farm_requires builds serving its cells
    # The compile its binary comes from (docs/adr/0019-one-compile-per-cuda-major.md): the CUDA
    # whose toolkit and torch compile it, the CUDA tags that one compile serves (compile_cuda
    # first; just its own where it compiles alone) and the compile's label in ids.
    compile_cuda: str
    variants: tuple[str, ...]
    compile_label: str
    compile_name: str  # its wheel name, or the per-CUDA one's at the major: 'spconv-cu13'

    @cached_property
    def torch_minor(self) -> str | None:
        return None if self.torch is None else ".".join(self.torch.split(".")[:2])

    # Its names, made once with the build (a plan asks for each of every build): the local
    # version label (docs/adr/0002-local-version-label.md) and Python tag; its id, e.g.
    # 'flash-attn-2.8.3-cu130torch2.14-cp312-linux_x86_64' (the wheel's own name, version and tags,
    # as `build_id_from_wheel` reads them back); its compile's, e.g.
    # 'flash-attn-2.8.3-cu13torch2.15-cp312-linux_x86_64' for the cu130 and cu132 wheels of one
    # compile (its own id where it compiles alone); and its group job's, which builds it with
    # the other Pythons (docs/adr/0016-python-groups.md) and CUDA minors (ADR 19) of its compile,
    # e.g. 'flash-attn-2.8.3-cu13torch2.15-linux_x86_64' (a build for every Python, abi3 or no
    # torch ABI, is a group with its compile's minors).
    label: str = field(init=False, repr=False, compare=False)
    python_tag: str = field(init=False, repr=False, compare=False)
    id: str = field(init=False, repr=False, compare=False)
    compile_id: str = field(init=False, repr=False, compare=False)
    group_id: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        label = self.label_for(self.abi, self.cuda, self.torch, self.covers)
        tag = python_tag(self.python_abi, self.python, self.python_floor)
        start = f"{self.compile_name}-{self.version}-{self.compile_label}"
        compile_id = f"{start}-{tag}-{self.platform}"
        put = object.__setattr__  # frozen: each set once, here
        put(self, "label", label)
        put(self, "python_tag", tag)
        put(self, "id", f"{self.distribution}-{self.version}-{label}-{tag}-{self.platform}")
        put(self, "compile_id", compile_id)
        put(self, "group_id", f"{start}-{self.platform}" if self.abi == "cpython" else compile_id)

    @staticmethod
    def label_for(abi: AbiKind, cuda: str, torch: str | None, covers: Iterable[Cell]) -> str:
        """The label of a build of `abi` for `cuda` built against `torch`, serving `covers`."""
        if abi == "torch-free":
            return str(Label(cuda))
        if abi == "torch-stable":  # the floor it serves, not the torch it compiles with
            return _label(cuda, min((c.torch for c in covers), key=parsed), stable=True)
        return _label(cuda, None if torch is None else torch_minor(torch))


@lru_cache(maxsize=4096)  # a grid has a few labels, asked for by every build
def _label(cuda: str, torch: str | None, *, stable: bool = False) -> str:
    return str(Label(cuda, torch, stable))


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
    for i, pv in enumerate(package.versions):
        version = str(pv.version)
        for release in matrix.releases:
            pythons = release.pythons()
            own = pv.torch_spec  # this version's own torch range, inside the package's
            version_rule = (
                f"{package.file.name}: versions[{i}].torch {own}"
                if own is not None and parsed(release.minor) not in own
                else None
            )
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
                        rule = rule_for(release, cuda, python, platform) or version_rule
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


def _collapse_key(abi: Abi, cell: Cell) -> tuple[str, ...]:
    """Cells one build serves: a full-ABI build binds to its torch minor, a per-Python build
    to its Python; the stable ABI and torch-free bind to no torch, abi3 and 'none' to no Python."""
    torch = (cell.torch,) if abi.kind in ("cpython", "abi3") else ()
    python = (cell.python,) if abi.python == "cpython" else ()
    return (cell.package, cell.version, cell.cuda, cell.platform, *torch, *python)


def builds(matrix: Matrix, package: Package, kept: list[Cell]) -> list[Build]:
    """Collapse cells into builds: abi3 once per (torch, CUDA, platform), torch-stable once per
    (CUDA, platform[, Python]), torch-free once per (CUDA, [Python,] platform). A build is
    compiled with the lowest Python of the cells it covers and their torch; torch-stable with
    the newest torch (TORCH_TARGET_VERSION holds the floor; the newest headers carry the fixes,
    and the newest torch's environment is the one every other build of the run shares)."""
    drafts = _drafts(matrix, package, kept)
    merged = compile_once_per_major(matrix, package, drafts) if matrix.farm.cuda_majors else {}
    out = []
    for i, d in enumerate(drafts):
        made = merged.get(i) or Compile(  # compiled alone
            cuda=d.cuda,
            variants=(d.cuda,),
            archs=d.archs,
            torch=d.torch,
            minutes=estimate(package, d.version, d.archs),
            label=d.label,
            name=package.distribution_for(d.cuda),
        )
        out.append(
            Build(
                package=package.name,
                distribution=package.distribution_for(d.cuda),
                version=d.version,
                abi=d.abi.kind,
                cuda=d.cuda,
                torch=made.torch,
                python=d.python,
                platform=d.platform,
                archs=made.archs,
                covers=d.covers,
                python_abi=d.abi.python,
                python_floor=d.abi.python_floor,
                minutes=made.minutes,
                compile_cuda=made.cuda,
                variants=made.variants,
                compile_label=made.label,
                compile_name=made.name,
            )
        )
    return out


def _drafts(matrix: Matrix, package: Package, kept: list[Cell]) -> list[Draft]:
    """The cells collapsed into one draft per build (`builds`)."""
    groups: dict[tuple[str, ...], list[Cell]] = {}
    abis: dict[str, Abi] = {}  # by version: asked per cell
    for cell in kept:
        if cell.version not in abis:
            abis[cell.version] = package.abi_for(cell.version)
        groups.setdefault(_collapse_key(abis[cell.version], cell), []).append(cell)
    releases = {r.minor: str(r.version) for r in matrix.releases}
    archs: dict[tuple[str, str, str], ArchList] = {}  # by (version, CUDA, platform): per build
    out = []
    for covers in groups.values():
        abi = abis[covers[0].version]
        first = covers[0]  # most builds serve one cell
        if len(covers) > 1:
            newest = max(covers, key=lambda c: parsed(c.torch)).torch
            with_torch = [c for c in covers if abi.kind != "torch-stable" or c.torch == newest]
            first = min(with_torch, key=lambda c: (parsed(c.torch), parsed(c.python)))
        where = (first.version, first.cuda, first.platform)
        if where not in archs:
            archs[where] = matrix.arch.for_target(package, *where)
        torch = None if abi.kind == "torch-free" else releases[first.torch]
        out.append(
            Draft(
                version=first.version,
                platform=first.platform,
                cuda=first.cuda,
                python=first.python,
                abi=abi,
                torch=torch,
                archs=archs[where],
                covers=tuple(sorted(covers)),
                label=Build.label_for(abi.kind, first.cuda, torch, covers),
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
        """Builds by id, made once: resolving many ids never re-expands the grid. Two builds of
        one id (two package files of one wheel name, which the loader refuses) are an error,
        never one silently taking the other's place."""
        out: dict[str, Build] = {}
        for build in self.builds:
            first = out.setdefault(build.id, build)
            if first is not build:
                msg = (
                    f"build id {build.id!r} is planned twice (by {first.package!r} and "
                    f"{build.package!r}): give each package file a wheel name of its own"
                )
                raise PlanError(msg)
        return out


def _below_floor(package: Package, cell: Cell) -> str | None:
    """Why a cell is below its version's ABI floor (stable-ABI torch, abi3 / none Python)."""
    abi = package.abi_for(cell.version)
    if abi.kind == "torch-stable" and abi.min_torch and parsed(cell.torch) < parsed(abi.min_torch):
        return f"{package.file.name}: abi.min_torch {abi.min_torch} (stable ABI floor)"
    if abi.python_floor and parsed(cell.python) < parsed(abi.python_floor):
        return f"{package.file.name}: abi.python_floor {abi.python_floor} (the wheel's tag floor)"
    return None


ServedKey = tuple[str, str, str, str, str]  # (package, cuda, torch, python, platform)


def _served_key(package: str, cell: Cell) -> ServedKey:
    return (package, cell.cuda, cell.torch, cell.python, cell.platform)


def _unserved(package: Package, cell: Cell, served: dict[ServedKey, Build]) -> str | None:
    """Why a cell is dropped: a package it imports (farm_requires) has no build serving it."""
    for req in package.farm_requires:
        if _served_key(req, cell) not in served:
            return (
                f"{package.file.name}: farm_requires {req} serves no {cell.cuda} / torch "
                f"{cell.torch} / Python {cell.python} / {cell.platform} cell"
            )
    return None


def _dependency_order(packages: tuple[Package, ...]) -> list[Package]:
    """Packages after those they require (the loader refuses cycles; any left go last)."""
    by_name = {p.name: p for p in packages}
    placed: dict[str, Package] = {}
    while len(placed) < len(packages):
        ready = [
            p
            for p in packages
            if p.name not in placed
            and all(r in placed or r not in by_name for r in p.farm_requires)
        ]
        for p in ready or [p for p in packages if p.name not in placed]:
            placed[p.name] = p
    return list(placed.values())


@gcpause.paused()
def expand(matrix: Matrix) -> Expansion:
    """Expand every package; a cell below its version's ABI floor is dropped first, and no cell
    its runner cannot build is kept (matrix/toolkits.py), nor one a package it requires does
    not serve. Packages expand after those they require; the result keeps the files' order."""
    blocker = cache(support(matrix).blocker)
    served: dict[ServedKey, Build] = {}  # the newest version's build of each cell required
    required = {r for p in matrix.packages for r in p.farm_requires}
    made: dict[str, tuple[list[Cell], list[Excluded], list[Build]]] = {}
    for package in _dependency_order(matrix.packages):
        kept: list[Cell] = []
        excluded: list[Excluded] = []
        for item in cells(matrix, package, blocker):
            if isinstance(item, Excluded):
                excluded.append(item)
            elif rule := _below_floor(package, item) or _unserved(package, item, served):
                excluded.append(Excluded(item, rule))
            else:
                kept.append(item)
        made_builds = [
            replace(b, requires=ids) if (ids := _required_ids(package, b, served)) else b
            for b in builds(matrix, package, kept)
        ]
        for b in made_builds if package.name in required else ():
            for c in b.covers:
                key = _served_key(b.package, c)
                if key not in served or parsed(b.version) > parsed(served[key].version):
                    served[key] = b
        made[package.name] = (kept, excluded, made_builds)
    ordered = [made[p.name] for p in matrix.packages]
    return Expansion(
        tuple(c for kept, _, _ in ordered for c in kept),
        tuple(e for _, excluded, _ in ordered for e in excluded),
        tuple(b for _, _, bs in ordered for b in bs),
    )


def _required_ids(
    package: Package, build: Build, served: dict[ServedKey, Build]
) -> tuple[str, ...]:
    """The builds of its farm_requires that serve the cells this build serves."""
    return tuple(
        sorted(
            {served[_served_key(req, c)].id for req in package.farm_requires for c in build.covers}
        )
    )
