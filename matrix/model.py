"""Typed, frozen views of the maintainers' YAML. Parsed once at the edge (`load.py`); nothing
below the loader sees a raw dict."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Literal

from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from wheelfarm.core.errors import PlanError
from wheelfarm.core.label import cuda_version, parsed, torch_minor
from wheelfarm.core.platforms import NAMES
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.facts import Facts

AbiKind = Literal["cpython", "abi3", "torch-stable", "torch-free"]
# what a package's `env` values may name: torch_memory_saver names its binaries by the CUDA major;
# a CMake build without torch (llama-cpp-python) takes its arch list inside CMAKE_ARGS
ENV_PLACEHOLDER = re.compile(r"\{(cuda|cuda_major|archs)\}")
DIST_PLACEHOLDER = "{cuda_tag}"  # the one placeholder a per-CUDA distribution name takes
PythonAbi = Literal["cpython", "abi3", "none"]
ArchVia = Literal["torch", "env", "patch", "none"]  # none: compiles no device code
ArchFormat = Literal["torch", "semicolon-int", "comma-int", "cmake"]


@dataclass(frozen=True, order=True)
class Arch:
    """One SM target: `sm` is '90' for 9.0; `ptx` also embeds PTX for it; `variant` 'a' is
    NVIDIA's arch-specific code (sm_120a runs on 12.0 only, not on 12.1 as sm_120 does), 'f'
    the family-specific one."""

    sm: int
    ptx: bool = False
    variant: str = ""

    @property
    def dotted(self) -> str:
        """'9.0' / '12.0a' / '12.0+PTX': as a package file lists it (ArchList.torch drops the
        variant for the package's own variable)."""
        return self.spelled(self.variant)

    def spelled(self, variant: str) -> str:
        """The arch as a list gives it, with `variant` for its own."""
        return f"{self.sm // 10}.{self.sm % 10}{variant}" + ("+PTX" if self.ptx else "")

    @property
    def name(self) -> str:
        """'sm_90', 'sm_120a': the arch as fatbins and nvcc name it."""
        return f"sm_{self.sm}{self.variant}"


@dataclass(frozen=True)
class ArchList:
    """An ordered arch list such as '7.5;8.0;12.0+PTX'; empty for a package that compiles no
    device code (`arch: {via: none}`), whose wheel carries no fatbin."""

    archs: tuple[Arch, ...]

    @classmethod
    def parse(cls, text: str) -> ArchList:
        """Parse TORCH_CUDA_ARCH_LIST syntax.

        >>> ArchList.parse("8.0;9.0+PTX").cubins
        ('sm_80', 'sm_90')
        """
        archs: list[Arch] = []
        for raw in text.replace(" ", ";").split(";"):
            item = raw.strip()
            if not item:
                continue
            ptx = item.endswith("+PTX")
            major, _, minor = item.removesuffix("+PTX").partition(".")
            variant = minor[1:] if minor[1:] in ("a", "f") else ""
            minor = minor.removesuffix(variant)
            if not (major.isdigit() and minor.isdigit() and len(minor) == 1):
                msg = (
                    f"invalid arch {item!r} in {text!r}: expected e.g. '9.0', '12.0a' or '12.0+PTX'"
                )
                raise ValueError(msg)
            if ptx and variant:
                msg = (
                    f"invalid arch {item!r} in {text!r}: +PTX only on a plain arch"
                    f" ({variant}-specific PTX runs on no later GPU); write '{major}.{minor}+PTX'"
                )
                raise ValueError(msg)
            sm = int(major) * 10 + int(minor)
            if any(a.sm == sm for a in archs):
                msg = f"duplicate arch {item!r} in {text!r}: list SM {major}.{minor} once"
                raise ValueError(msg)
            archs.append(Arch(sm, ptx, variant))
        if not archs:
            msg = f"empty arch list {text!r}"
            raise ValueError(msg)
        return cls(tuple(archs))

    @cached_property
    def torch(self) -> str:
        """The TORCH_CUDA_ARCH_LIST value: plain archs. A variant says what the package builds
        for an arch (sageattn3 turns 12.0 into sm_120a itself), and setup.py files that parse
        the list take numbers only (int('0a') fails)."""
        return ";".join(a.spelled("") for a in self.archs)

    @property
    def listed(self) -> str:
        """The list as the package file gives it, variants kept ('10.0a;12.0a')."""
        return ";".join(a.dotted for a in self.archs)

    @property
    def cubins(self) -> tuple[str, ...]:
        """SASS the wheel must carry, e.g. ('sm_80', 'sm_90', 'sm_120a')."""
        return tuple(a.name for a in self.archs)

    @property
    def ptx(self) -> tuple[str, ...]:
        """PTX the wheel must carry, e.g. ('sm_90',)."""
        return tuple(a.name for a in self.archs if a.ptx)

    def spelled(self, fmt: ArchFormat) -> str:
        """The list in a package's own variable format ('80;90' for semicolon-int; cmake is
        CMAKE_CUDA_ARCHITECTURES, SASS as '-real' and PTX as '-virtual', so a plain '90' never
        adds PTX the policy did not ask for).

        >>> ArchList.parse("9.0;10.0a;12.0+PTX").spelled("cmake")
        '90-real;100a-real;120-real;120-virtual'
        """
        if fmt == "torch":
            return self.torch
        if fmt == "cmake":
            return ";".join(
                f"{a.sm}{a.variant}-real" + (f";{a.sm}-virtual" if a.ptx else "")
                for a in self.archs
            )
        sep = ";" if fmt == "semicolon-int" else ","
        return sep.join(str(a.sm) for a in self.archs)


@dataclass(frozen=True, kw_only=True)
class TorchRelease:
    """One torch minor with its latest patch and the CUDA builds it really ships."""

    version: Version
    python_min: Version
    python_max: Version
    builds: dict[str, tuple[str, ...]]
    pypi: dict[str, str] = field(default_factory=dict)  # platform -> the CUDA of PyPI's wheel

    @cached_property
    def minor(self) -> str:
        return torch_minor(self.version)

    def pythons(self) -> tuple[str, ...]:
        """Every CPython minor torch ships for, oldest first."""
        lo, hi = self.python_min.release, self.python_max.release
        return tuple(f"{lo[0]}.{m}" for m in range(lo[1], hi[1] + 1))


@dataclass(frozen=True, kw_only=True)
class PlatformInfo:
    """Where a platform's jobs run and which wheel tag its repaired wheels get."""

    runner: str
    container: str
    wheel_platform: str


@dataclass(frozen=True, kw_only=True)
class SplitCompile:
    """When a build compiles in shard jobs plus a link job (docs/adr/0011-split-compile.md)."""

    over_minutes: float  # a build predicted past this is split
    shard_minutes: float  # K = ceil(estimate / shard_minutes) compile shards
    job_overhead_minutes: float  # what each job of a split build repeats (toolkit, torch, source)
    link_fraction: float  # the link job's share of the estimate (cache hits, link, repair, verify)
    platforms: tuple[str, ...]  # where the ninja shim runs (POSIX)


@dataclass(frozen=True, kw_only=True)
class PythonGroups:
    """Where one job builds every Python of a group against one compiler cache, and what each
    Python after the first costs (docs/adr/0016-python-groups.md)."""

    next_python_fraction: float  # a further Python's share of its own estimate (measured)
    platforms: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class CudaMajors:
    """One compile serves every CUDA minor of a major that torch ships for a cell's torch,
    platform and Python (docs/adr/0019-one-compile-per-cuda-major.md)."""

    variant_minutes: float  # each further minor's wheel: its torch env, relabel, repair, verify


@dataclass(frozen=True, kw_only=True)
class TierRule:
    """Cells a priority tier holds: `torch` 'newest', 'previous' or a glob of minors; `cuda`
    'pypi' (the CUDA of PyPI's wheel of that minor, torch.yaml's `pypi`) or a glob of tags."""

    torch: str
    cuda: str = "*"


@dataclass(frozen=True, kw_only=True)
class GpuCheck:
    """Where the farm runs its wheels' kernels before it lists them (farm.yaml gpu_check;
    docs/gpu-checks.md)."""

    runner: str | None  # a runner label with an NVIDIA GPU; None: no GPU check in the farm
    platforms: tuple[str, ...]  # the wheels that runner can load (its OS and CPU)
    minutes_per_wheel: float  # a wheel's install and check on it: the GPU job's estimate


@dataclass(frozen=True, kw_only=True)
class Pool:
    """One pool of concurrent build jobs for every platform, and the order it builds in
    (docs/adr/0017-one-pool.md)."""

    lanes: int  # build jobs at once, all platforms together (farm.yml's max-parallel)
    shard_hours: float  # a lane's shard holds about this much predicted work, at least
    run_days: float  # a farm run plans no more than its lanes finish in this time
    tiers: tuple[tuple[TierRule, ...], ...]  # tier 1 first; the rest after, newest torch first


@dataclass(frozen=True, kw_only=True)
class FarmConfig:
    """Whole-run settings (farm.yaml)."""

    max_jobs_per_shard: int
    hosted_job_limit_minutes: int
    publish_batch_wheels: int  # a publish job's share of a shard: it must fit a runner's disk
    platforms: dict[str, PlatformInfo]
    split_compile: SplitCompile | None = None
    python_groups: PythonGroups | None = None  # None: every build is a job of its own
    cuda_majors: CudaMajors | None = None  # None: every CUDA minor compiles on its own
    pool: Pool
    gpu_check: GpuCheck | None = None  # None: farm.yaml names no gpu_check


@dataclass(frozen=True, kw_only=True)
class Source:
    """Where a version's source comes from: exactly one of sdist, git or path is set."""

    sdist: str | None = None
    sha256: str | None = None
    git: str | None = None
    commit: str | None = None
    # git: also check out the submodules the commit pins: all (True) or only these paths
    # (flash-attention's CUTLASS without its ROCm-only composable_kernel and aiter)
    submodules: bool | tuple[str, ...] = False
    path: str | None = None
    subdir: str | None = None  # sdist, git: the folder to build, relative to the source's root

    @property
    def digest(self) -> str:
        """What pins the source: the sdist hash, the git commit or 'path:...'."""
        return self.sha256 or self.commit or f"path:{self.path}"

    @staticmethod
    def subdir_problem(subdir: str) -> str | None:
        """Why `subdir` cannot name a folder inside a source tree, or None. The schema's rule in
        code, for the builder, which must not trust a Source it did not load (symlinks are its
        own check: they exist only once the source is on disk).

        >>> Source.subdir_problem("hopper"), Source.subdir_problem("a/../../b")
        (None, "climbs out with '..'")
        """
        if not subdir:
            return "is empty"
        if re.search(r"[\x00-\x1f\x7f]", subdir):
            return "holds a control character (NUL, newline, ...)"
        if subdir[0] in "/\\" or re.match(r"[A-Za-z]:", subdir):
            return "is absolute"
        if ".." in re.split(r"[/\\]", subdir):
            return "climbs out with '..'"
        return None


def python_tag(abi: PythonAbi, python: str, floor: str | None = None) -> str:
    """A wheel's Python tag when built with `python`: 'cp312', 'cp39-abi3', 'py39-none'.

    >>> python_tag("cpython", "3.12"), python_tag("abi3", "3.10"), python_tag("none", "3.10", "3.9")
    ('cp312', 'cp310-abi3', 'py39-none')
    """
    if abi == "cpython":
        return f"cp{python.replace('.', '')}"
    digits = (floor or python).replace(".", "")
    return f"cp{digits}-abi3" if abi == "abi3" else f"py{digits}-none"


@dataclass(frozen=True, kw_only=True)
class Abi:
    """How a wheel binds to torch (`kind`) and to Python (`python`), which decides the cells one
    build serves. A package's own setup.py fixes the floor in an abi3 or 'none' tag (xformers
    writes py39-none whatever Python builds it), so the file can name it: `python_floor`."""

    kind: AbiKind
    min_torch: str | None = None  # torch-stable: the TORCH_TARGET_VERSION
    python: PythonAbi = "cpython"  # 'abi3' for kind abi3; 'none': no Python C API at all
    python_floor: str | None = None  # '3.9' -> cp39-abi3 / py39-none; None: the build's Python


@dataclass(frozen=True, kw_only=True)
class PackageVersion:
    version: Version
    source: Source
    patches: tuple[str, ...] = ()
    yanked: str | None = None
    allow_yanked: bool = False  # build from an sdist its index has yanked (PEP 592)
    abi: Abi | None = None  # this version's own ABI, where it differs from the package's
    build_minutes_per_arch: float | None = None  # this version's own estimate; None: package's
    torch_spec: SpecifierSet | None = None  # the torch minors this version serves; None: all
    env: dict[str, str] = field(default_factory=dict)  # over the package's env, under platform_env


@dataclass(frozen=True, kw_only=True)
class ArchRule:
    """An arch override: the first rule whose cuda, platform and version match replaces the
    policy (a release without a newer one's kernels keeps its own list)."""

    archs: ArchList
    cuda: SpecifierSet | None = None
    platform: str | None = None
    version: SpecifierSet | None = None


@dataclass(frozen=True, kw_only=True)
class Exclusion:
    """A maintainer's rule removing cells; the reason shows in --explain."""

    reason: str
    version: str | None = None
    torch: str | None = None
    cuda: str | None = None
    python: str | None = None
    platform: str | None = None
    line: int = 0


@dataclass(frozen=True, kw_only=True)
class Package:
    """One package file, parsed and checked."""

    name: NormalizedName
    display_name: str
    file: Path
    distribution: str | None = None  # per-CUDA wheel name, 'spconv-{cuda_tag}'; None: name
    versions: tuple[PackageVersion, ...]
    abi: Abi
    arch_via: ArchVia = "torch"
    arch_env: str | None = None
    arch_format: ArchFormat = "torch"
    arch_overrides: tuple[ArchRule, ...] = ()
    one_arch_per_binary: bool = False  # tiny-cuda-nn: an extension per arch, each with its PTX
    # woct0rdho's SageAttention: each extension holds the archs its kernels are built for
    some_archs_per_binary: bool = False
    local_version_env: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    # platform -> variables set on that platform only, over `env` (MSVC's spellings of flags)
    platform_env: dict[str, dict[str, str]] = field(default_factory=dict)
    build_requires: tuple[str, ...] = ()
    torch_spec: SpecifierSet = field(default_factory=SpecifierSet)
    python_spec: SpecifierSet = field(default_factory=SpecifierSet)
    cuda_spec: SpecifierSet = field(default_factory=SpecifierSet)
    platforms: tuple[str, ...] = NAMES
    exclusions: tuple[Exclusion, ...] = ()
    imports: tuple[str, ...] = ()
    imports_gpu: tuple[str, ...] = ()  # modules that import only where a GPU is
    built_on: dict[str, str] = field(default_factory=dict)  # platform -> a build's citation
    import_requires: tuple[str, ...] = ()
    import_with_torch: bool = False  # torch-free binaries, Python that imports torch
    farm_requires: tuple[NormalizedName, ...] = ()  # farm packages its modules import
    farm_build_requires: tuple[NormalizedName, ...] = ()  # of those, the ones its build imports
    vendor_allow: tuple[str, ...] = ()
    # CUDA versions its code branches at inside a major: minors on either side compile apart
    cuda_minor_code: tuple[Version, ...] = ()
    cuda_minor_reason: str = ""
    build_minutes_per_arch: float = 10.0
    gb_per_job: float = 3.0

    def env_for(
        self,
        cuda: str,
        platform: str | None = None,
        archs: ArchList | None = None,
        version: str | None = None,
    ) -> dict[str, str]:
        """The package's variables for one build: `env`, then `version`'s own env over it, then
        `platform_env` of `platform` over both; '{cuda}' becomes the CUDA version ('13.0'),
        '{cuda_major}' its major ('13'), '{archs}' the build's arch list in the package's arch
        format; the loader refuses any other brace."""
        toolkit = cuda_version(cuda)
        values = {
            "cuda": str(toolkit),
            "cuda_major": str(toolkit.major),
            "archs": (archs or ArchList(())).spelled(self.arch_format),
        }
        own = None if version is None else self._version(version)
        merged = {
            **self.env,
            **(own.env if own is not None else {}),
            **self.platform_env.get(platform or "", {}),
        }
        return {k: ENV_PLACEHOLDER.sub(lambda m: values[m[1]], v) for k, v in merged.items()}

    def distribution_for(self, cuda: str) -> NormalizedName:
        """The wheel's distribution name for one CUDA tag: 'spconv-{cuda_tag}' gives
        'spconv-cu130' for cu130 (upstream's own per-CUDA names); the package's name where
        the file gives none."""
        if self.distribution is None:
            return self.name
        return canonicalize_name(self.distribution.replace(DIST_PLACEHOLDER, cuda))

    @cached_property
    def _by_version(self) -> dict[str, PackageVersion]:
        """The file's versions by their normalized number: expand asks for one per cell."""
        return {str(v.version): v for v in reversed(self.versions)}  # the first of one wins

    def _version(self, version: str) -> PackageVersion | None:
        known = self._by_version
        return known[version] if version in known else known.get(str(parsed(version)))

    def abi_for(self, version: str) -> Abi:
        """The ABI of one version: its own where the file gives one (xformers went cpython ->
        abi3 -> torch-stable across releases), else the package's."""
        own = self._version(version)
        return (own.abi if own is not None else None) or self.abi

    def minutes_per_arch(self, version: str) -> float:
        """One version's build estimate per arch: its own where given, else the package's."""
        own = self._version(version)
        minutes = None if own is None else own.build_minutes_per_arch
        return self.build_minutes_per_arch if minutes is None else minutes


@dataclass(frozen=True, kw_only=True)
class ArchPolicy:
    """Per-CUDA, per-platform arch lists, and the SM range each toolkit compiles."""

    policy: dict[str, dict[str, ArchList]]
    supported: dict[str, tuple[int, int]]

    def for_target(self, package: Package, version: str, cuda: str, platform: str) -> ArchList:
        """The arch list a build of `version` must embed: none for `via: none`, else the
        package's first matching override, else policy."""
        if package.arch_via == "none":
            return ArchList(())
        cv = cuda_version(cuda)
        for rule in package.arch_overrides:
            if (
                (rule.cuda is None or cv in rule.cuda)
                and rule.platform in (None, platform)
                and (
                    rule.version is None or rule.version.contains(parsed(version), prereleases=True)
                )
            ):
                return rule.archs
        return self.policy[str(cv)][platform]


@dataclass(frozen=True, kw_only=True)
class Matrix:
    """Every file of the farm root, loaded once: grid, arch policy, farm settings, the fact files
    (toolkits, compatibility, libraries, drivers) and the packages."""

    index_url: str
    releases: tuple[TorchRelease, ...]
    arch: ArchPolicy
    farm: FarmConfig
    facts: Facts
    packages: tuple[Package, ...]
    root: FarmRoot

    def package(self, name: str) -> Package:
        wanted = canonicalize_name(name)
        for p in self.packages:
            if p.name == wanted:
                return p
        known = [p.name for p in self.packages]
        hint = difflib.get_close_matches(wanted, known, n=1)
        tip = f"; did you mean {hint[0]!r}?" if hint else ""
        msg = f"unknown package {name!r} (the matrix has: {', '.join(known)}){tip}"
        raise PlanError(msg)

    def torch_index(self, cuda: str) -> str:
        """The torch wheel index for one CUDA build (a mirror can be set in torch.yaml)."""
        return self.index_url.format(cuda=cuda)

    def release(self, minor: str) -> TorchRelease:
        for r in self.releases:
            if r.minor == minor:
                return r
        msg = f"torch {minor!r} is not in torch.yaml ({', '.join(r.minor for r in self.releases)})"
        raise PlanError(msg)


# Platforms where a package is planned on faith costs the most runner-hours: Windows and aarch64
# builds fail in ways a Linux x86_64 build does not show (MSVC flags, the arm toolchain).
UNPROVEN = ("win_amd64", "linux_aarch64")


def unbuilt_platforms(package: Package) -> str | None:
    """A warning naming the Windows and aarch64 platforms `package` plans with no build named
    in its `built_on` (measured here or cited from upstream), or None: a package starts narrow."""
    unbuilt = [p for p in UNPROVEN if p in package.platforms and p not in package.built_on]
    if not unbuilt:
        return None
    return (
        f"{package.file}: plans {' and '.join(unbuilt)} with no build named there (built_on): "
        f"limit constraints.platforms to the platforms built, or cite each build in built_on"
    )
