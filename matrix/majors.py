"""One compile for the CUDA minors of a major (docs/adr/0019-one-compile-per-cuda-major.md): the
drafts of builds that differ only in their CUDA minor merged into one compile, with the union of
their arch lists and the toolkit of the oldest minor that emits it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, NamedTuple

from packaging.version import Version

from wheelfarm.core.label import cuda_version
from wheelfarm.matrix.model import Abi, Arch, ArchList, Matrix, Package, python_tag

if TYPE_CHECKING:
    from wheelfarm.matrix.expand import Cell


class Draft(NamedTuple):
    """A build before its compile is known: what merging the CUDA minors of a major reads."""

    version: str
    platform: str
    cuda: str
    python: str
    abi: Abi
    torch: str | None
    archs: ArchList
    covers: tuple[Cell, ...]
    label: str

    @property
    def python_tag(self) -> str:
        return python_tag(self.abi.python, self.python, self.abi.python_floor)


class Compile(NamedTuple):
    """The compile a draft's wheel comes from (ADR 19): its toolkit's CUDA, the minors it
    serves, its arch list, torch and estimate, and its label and name in ids."""

    cuda: str
    variants: tuple[str, ...]
    archs: ArchList
    torch: str | None
    minutes: float
    label: str
    name: str


def estimate(package: Package, version: str, archs: ArchList) -> float:
    """A compile's estimate: the version's minutes per arch for each (arch via none: once)."""
    return package.minutes_per_arch(version) * max(1, len(archs.archs))


def _runs(package: Package, minors: list[Draft]) -> Iterator[list[Draft]]:
    """The drafts of one major, oldest CUDA first, in runs no branch of the package's code
    (`cuda_minor_code`) falls inside: each run can be one compile."""
    run: list[Draft] = []
    for b in minors:
        if run and any(
            cuda_version(run[-1].cuda) < at <= cuda_version(b.cuda)
            for at in package.cuda_minor_code
        ):
            yield run
            run = []
        run.append(b)
    if run:
        yield run


def _union(lists: Iterable[ArchList]) -> ArchList | None:
    """Every SM any list names, with PTX where any asks for it (each variant's wheel keeps its
    own list's SASS); None where two lists want one SM in different variants (9.0 and 9.0a)."""
    by_sm: dict[int, Arch] = {}
    for archs in lists:
        for a in archs.archs:
            have = by_sm.setdefault(a.sm, a)
            if have.variant != a.variant:
                return None
            if a.ptx and not have.ptx:
                by_sm[a.sm] = replace(have, ptx=True)
    return ArchList(tuple(by_sm[sm] for sm in sorted(by_sm)))


FAMILY_FROM = Version("12.9")  # nvcc emits family-specific ('f') targets from CUDA 12.9


def _compiler(matrix: Matrix, run: list[Draft], archs: ArchList) -> Draft | None:
    """The draft of the run whose toolkit compiles for all: the oldest CUDA whose SM range
    (arch.yaml `supported`) holds every arch. Oldest, because a binary of an older minor loads
    with a newer one's runtime (ADR 19); None where no toolkit of the run emits them all."""
    for b in run:
        version = cuda_version(b.cuda)
        low, high = matrix.arch.supported[str(version)]
        if all(low <= a.sm <= high for a in archs.archs) and (
            version >= FAMILY_FROM or all(a.variant != "f" for a in archs.archs)
        ):
            return b
    return None


def _shared_torch(matrix: Matrix, run: list[Draft]) -> str | None:
    """The torch one compile of the run builds and verifies against: theirs (one minor) for a
    full-ABI build, none torch-free; on the stable ABI the newest minor that ships every CUDA
    of the run (each variant's wheel is then verified with it). None where no minor does."""
    if run[0].torch is None:
        return None
    if run[0].abi.kind != "torch-stable":
        return run[0].torch
    shared = set.intersection(*({c.torch for c in b.covers} for b in run))
    if not shared:
        return None
    return str(matrix.release(max(shared, key=Version)).version)


def compile_once_per_major(
    matrix: Matrix, package: Package, drafts: list[Draft]
) -> dict[int, Compile]:
    """One compile for the CUDA minors of a major (farm.yaml `cuda_majors`, ADR 19): the drafts
    of one version, platform and Python tag (and torch minor, for a full-ABI or abi3 build)
    whose CUDAs share a major, split where the package's code branches on the minor, each get
    the union of their arch lists and the toolkit of the oldest minor that emits it; by the
    draft's index. A run whose lists cannot be merged or whose toolkits cannot emit the union
    stays apart (not in the answer)."""
    buckets: dict[tuple[str, ...], list[int]] = {}
    majors: dict[str, str] = {}  # CUDA tag -> its major, asked per draft
    for i, d in enumerate(drafts):
        torch = d.torch if d.abi.kind in ("cpython", "abi3") else None  # one full version a minor
        if d.cuda not in majors:
            majors[d.cuda] = str(cuda_version(d.cuda).major)
        key = (d.version, d.platform, d.python_tag, torch or "", majors[d.cuda])
        buckets.setdefault(key, []).append(i)
    # a run's union and toolkit follow from its version, platform and CUDAs: made once each
    compilers: dict[tuple[str, ...], tuple[ArchList | None, str | None]] = {}
    merged: dict[int, Compile] = {}
    for bucket in buckets.values():
        if len(bucket) == 1:  # one minor of its major: it compiles alone
            continue
        bucket.sort(key=lambda i: cuda_version(drafts[i].cuda))
        runs = list(_runs(package, [drafts[i] for i in bucket]))
        at = iter(bucket)
        for run in runs:
            indices = [next(at) for _ in run]
            if len(run) == 1:
                continue
            where = (run[0].version, run[0].platform, *(d.cuda for d in run))
            if where not in compilers:
                archs = _union(d.archs for d in run)
                first = _compiler(matrix, run, archs) if archs is not None else None
                compilers[where] = (archs, None if first is None else first.cuda)
            archs, cuda = compilers[where]
            torch = _shared_torch(matrix, run) if cuda is not None else None
            if archs is None or cuda is None or (torch is None and run[0].torch is not None):
                continue
            first = next(d for d in run if d.cuda == cuda)
            # named for the major; where the package's code splits the major, for its toolkit
            major = f"cu{cuda_version(cuda).major}" if len(runs) == 1 else cuda
            one = Compile(
                cuda=cuda,
                variants=(cuda, *(d.cuda for d in run if d is not first)),
                archs=archs,
                torch=torch,
                minutes=estimate(package, first.version, archs),
                label=first.label.replace(cuda, major, 1),  # its torch is its first's
                name=package.distribution_for(major),
            )
            merged.update(dict.fromkeys(indices, one))
    return merged
