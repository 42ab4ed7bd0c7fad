"""Verify a wheel before it is published: every rule here is a promise to the farm's users.

The static checks, here, read the wheel only (name, METADATA, RECORD, archs, glibc, NEEDED,
vendored libraries). The import check, which installs the wheel into a fresh venv beside the
target's torch, is builder/importcheck.py's `check_import` (it needs the build's environments);
a build and `wheelfarm verify` (`build.verify_wheel`) run both.
"""

from __future__ import annotations

import email.parser
import hashlib
import re
import stat
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from packaging.tags import parse_tag
from packaging.utils import canonicalize_name, parse_wheel_filename

from wheelfarm.builder.binary import BinaryInfo, inspect_binary, is_binary
from wheelfarm.builder.gpucheck import CheckRun
from wheelfarm.builder.policy import LibraryPolicy
from wheelfarm.core.archive import READ_ERRORS, Budget, GiB, Limits, unsafe_reason
from wheelfarm.core.platforms import platform_family
from wheelfarm.core.wheelfile import dist_info, parse_metadata, record_problems
from wheelfarm.core.wheelname import python_tag
from wheelfarm.matrix.model import ArchList
from wheelfarm.scripts.wheelfarm_install import arch_target, runs_any, runs_text

_MANYLINUX = re.compile(r"^manylinux_(\d+)_(\d+)_")
# A CUDA wheel for many archs unpacks to hundreds of MB; verify reads one member at a time.
WHEEL_LIMITS = Limits(max_bytes=4 * GiB)
# Every compute capability NVIDIA has shipped a GPU with since Maxwell (NVIDIA, "CUDA GPU Compute
# Capability", developer.nvidia.com/cuda-gpus; 11.0 is Thor, 10.1 before CUDA 13): verify asks
# whether a wheel's code runs on each one its arch policy promises (the install helper's rule).
GPU_CAPABILITIES = (
    (5, 0), (5, 2), (5, 3), (6, 0), (6, 1), (6, 2), (7, 0), (7, 2), (7, 5), (8, 0), (8, 6),
    (8, 7), (8, 9), (9, 0), (10, 0), (10, 3), (11, 0), (12, 0), (12, 1),
)  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class Expectation:
    """What the target promises about its wheel."""

    name: str
    version: str  # public version
    label: str
    python_tag: str  # 'cp312' or 'cp310-abi3'
    platform: str  # farm platform, e.g. linux_x86_64
    archs: ArchList  # empty: the package compiles no device code (arch.via none)
    policy: LibraryPolicy  # the farm's libraries.yaml for the target's OS
    vendor_allow: tuple[str, ...] = ()
    one_arch_per_binary: bool = False  # each binary one arch of `archs` (SASS + its PTX)
    some_archs_per_binary: bool = False  # each binary some archs of `archs`, all together


@dataclass
class Report:
    """What verify found: per-binary archs, the problems (empty = publishable) and, when asked
    for, what the package's kernel check gave."""

    archs: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    kernels: CheckRun | None = None


_MANGLED = re.compile(r"^(.+)-[0-9a-f]{8}(\..+)$")


def _unmangle(name: str) -> str:
    """Auditwheel renames libfoo.so.1 to libfoo-1a2b3c4d.so.1; undo it for policy matching.

    >>> _unmangle("libc10-1a2b3c4d.so"), _unmangle("libgomp.so.1")
    ('libc10.so', 'libgomp.so.1')
    """
    match = _MANGLED.match(name)
    return f"{match[1]}{match[2]}" if match else name


def _check_name(wheel: Path, want: Expectation, report: Report) -> None:
    name, version, _, tags = parse_wheel_filename(wheel.name)
    if name != canonicalize_name(want.name):
        report.problems.append(f"file name: project {name!r}, expected {want.name!r}")
    if version.public != want.version or version.local != want.label:
        report.problems.append(
            f"file name: version {version}, expected {want.version}+{want.label}"
        )
    py = python_tag(tags)
    if py != want.python_tag:
        report.problems.append(f"file name: Python tag {py!r}, expected {want.python_tag!r}")
    tag = min(tags, key=str)
    if platform_family(tag.platform) != want.platform:
        report.problems.append(f"file name: platform {tag.platform!r} is not {want.platform}")


def _check_metadata(wheel: Path, zf: zipfile.ZipFile, report: Report) -> None:
    """METADATA agrees with the file name and RECORD with every file (pip rejects otherwise)."""
    _, version, _, _ = parse_wheel_filename(wheel.name)
    try:
        info = dist_info(zf.namelist())
        fields = parse_metadata(zf.read(f"{info}/METADATA"))
    except (ValueError, KeyError) as exc:
        report.problems.append(f"METADATA: {exc}")
        return
    if fields.get("version") != str(version):
        report.problems.append(
            f"METADATA Version {fields.get('version')!r} != file name "
            f"version {str(version)!r} (pip: MetadataInconsistent)"
        )
    if canonicalize_name(fields.get("name", "")) != parse_wheel_filename(wheel.name)[0]:
        report.problems.append(f"METADATA Name {fields.get('name')!r} != file name project")
    if info.removesuffix(".dist-info").rsplit("-", 1)[-1] != str(version):
        report.problems.append(f".dist-info folder {info!r} does not carry version {version}")
    report.problems += record_problems(wheel)
    report.problems += _link_problems(zf)


def _link_problems(zf: zipfile.ZipFile) -> list[str]:
    """Members stored as symbolic links (the zip's Unix mode): pip writes a link's target as
    the file's text, other installers make the link, which can point anywhere; RECORD's hash of
    it says nothing of what it points at."""
    return [
        f"{member.filename}: a symbolic link member (to "
        f"{zf.open(member).read(80).decode('utf-8', 'replace')!r}); store the file itself"
        for member in zf.infolist()
        if stat.S_ISLNK(member.external_attr >> 16)
    ]


def _check_binary(
    entry: str,
    info: BinaryInfo,
    want: Expectation,
    beside: dict[str, set[str]],
    report: Report,
) -> None:
    policy = want.policy
    # what repair vendored (*.libs), and with $ORIGIN in its RUNPATH what ships beside it;
    # folded: Windows imports LibZstd.dll as LIBZSTD.DLL
    own = str(PurePosixPath(entry).parent)
    carried = {
        policy.fold(name)
        for folder, names in beside.items()
        if folder.endswith(".libs") or (info.origin and folder == own)
        for name in names
    }
    for lib in info.needed:
        if not (policy.is_system(lib) or policy.is_provided(lib) or policy.fold(lib) in carried):
            report.problems.append(
                f"{entry} needs {lib}, which is neither a system library, "
                f"provided by torch, nor vendored in the wheel"
            )
    if not info.has_device_code:
        return
    report.archs[entry] = {"cubins": sorted(info.cubins), "ptx": sorted(info.ptx)}
    report.problems += _arch_problems(entry, info, _binary_archs(entry, info, want, report))


def _binary_archs(entry: str, info: BinaryInfo, want: Expectation, report: Report) -> ArchList:
    """The archs one binary must hold: the whole list; (one_arch_per_binary) the one listed arch
    it was built for, as SASS and PTX, a binary holding several being a problem of its own; or
    (some_archs_per_binary) the listed archs it holds SASS for, as the list spells them."""
    if not (want.one_arch_per_binary or want.some_archs_per_binary):
        return want.archs
    listed = {f"sm_{a.sm}": a for a in want.archs.archs}  # by number: sm_120a is 12.0's
    built = [base for base in _base(info.cubins) if base in listed]
    if want.some_archs_per_binary:
        if built:
            return ArchList(tuple(listed[base] for base in built))
        why = "none of " + want.archs.listed + " (arch.some_archs_per_binary)"
    elif len(built) == 1:
        return ArchList((replace(listed[built[0]], ptx=True),))
    else:
        why = f"not one arch of {want.archs.listed} (arch.one_arch_per_binary)"
    report.problems.append(
        f"{entry}: holds SASS for {', '.join(sorted(info.cubins)) or 'nothing'}, {why}"
    )
    return want.archs


def _base(archs: Iterable[str]) -> dict[str, list[str]]:
    """'sm_90' -> the archs built for 9.0 under any variant (['sm_90a'])."""
    out: dict[str, list[str]] = {}
    for arch in sorted(archs):
        major, minor, _ = arch_target(arch)
        out.setdefault(f"sm_{major}{minor}", []).append(arch)
    return out


def _arch_problems(entry: str, info: BinaryInfo, policy: ArchList) -> list[str]:
    """The policy's archs against the binary's: each one built (an `a` or `f` variant counts
    for its number: sageattention builds 9.0 as sm_90a), nothing else, and every GPU the
    policy's plain archs run on still runs this code (the install helper's rule): sm_120a alone
    does not run on 12.1, which the policy's 12.0 promises."""
    shown = f"policy: {policy.listed or 'no device code, arch.via none'}"
    problems = []
    for what, wanted, found in (
        ("SASS", policy.cubins, info.cubins),
        ("PTX", policy.ptx, info.ptx),
    ):
        listed, built = _base(wanted), _base(found)
        missing = [v for base, variants in listed.items() if base not in built for v in variants]
        extra = [v for base, variants in built.items() if base not in listed for v in variants]
        problems += [
            f"{entry}: {kind} {what} for {', '.join(items)} ({shown})"
            for kind, items in (("missing", missing), ("unexpected", extra))
            if items
        ]
    promised = [cc for cc in GPU_CAPABILITIES if runs_any(cc, policy.cubins, policy.ptx)]
    lost = [f"{m}.{n}" for m, n in promised if not runs_any((m, n), info.cubins, info.ptx)]
    if lost and not problems:
        problems.append(
            f"{entry}: no SASS or PTX runs on {', '.join(lost)}, which the policy's archs do "
            f"(it carries {runs_text(info.cubins, info.ptx)}; {shown}); build those archs "
            f"plain or family-specific (sm_120f), or add them to the policy"
        )
    return problems


def _check_members(wheel: Path, zf: zipfile.ZipFile, report: Report) -> bool:
    """Member names and sizes, from the zip's directory before any member is read: a name pip
    would write outside site-packages, a name twice, the limits. False when the wheel must not
    be read further."""
    budget = Budget(WHEEL_LIMITS, wheel.stat().st_size)
    seen: set[str] = set()
    safe = True
    for info in zf.infolist():
        name = info.filename
        reason = unsafe_reason(name)
        if reason is not None:
            report.problems.append(f"member {name!r} {reason}: pip would not install it safely")
            safe = False
        if name in seen:
            report.problems.append(f"member {name!r} appears twice: pip installs only one of them")
        seen.add(name)
        try:
            budget.charge(name, info.file_size)
        except ValueError as exc:
            report.problems.append(f"{exc}: not read further")
            return False
    return safe


def _check_wheel_file(wheel: Path, zf: zipfile.ZipFile, report: Report) -> None:
    """.dist-info/WHEEL exists, is version 1 and lists exactly the file name's tags (pip and
    uv pick a wheel by its name and install it by WHEEL)."""
    try:
        path = f"{dist_info(zf.namelist())}/WHEEL"
    except ValueError:
        return  # no single .dist-info: the METADATA check reports it
    if path not in zf.namelist():
        report.problems.append(f"{path} is missing: every wheel carries one (PEP 427)")
        return
    fields = email.parser.BytesParser().parsebytes(zf.read(path))
    version = str(fields.get("Wheel-Version", ""))
    if version.split(".", maxsplit=1)[0] != "1":
        report.problems.append(f"{path}: Wheel-Version {version!r}, installers read 1.x only")
    try:
        listed = {tag for line in fields.get_all("Tag", []) for tag in parse_tag(str(line))}
    except ValueError as exc:  # a tag of fewer than three parts
        report.problems.append(f"{path}: unreadable Tag: {exc}")
        return
    named = parse_wheel_filename(wheel.name)[3]
    if listed != named:
        report.problems.append(
            f"{path}: tags {sorted(map(str, listed))} differ from the file name's "
            f"{sorted(map(str, named))}"
        )


def verify_static(wheel: Path, want: Expectation) -> Report:
    """Every check that reads only the wheel file; an unreadable wheel is one problem."""
    report = Report()
    try:
        _check_name(wheel, want, report)
        with zipfile.ZipFile(wheel) as zf:
            if _check_members(wheel, zf, report):
                _check_contents(wheel, zf, want, report)
    except READ_ERRORS as exc:
        report.problems.append(f"cannot read {wheel.name}: {exc}")
    return report


def _check_contents(wheel: Path, zf: zipfile.ZipFile, want: Expectation, report: Report) -> None:
    """WHEEL, METADATA, RECORD, vendored libraries and every binary's archs, libraries and
    glibc."""
    _check_wheel_file(wheel, zf, report)
    _check_metadata(wheel, zf, report)
    binaries = [n for n in zf.namelist() if is_binary(n)]
    for entry in binaries:  # anywhere in the wheel: torch/lib/libc10.so is no better than .libs
        if want.policy.is_provided(_unmangle(PurePosixPath(entry).name)):
            report.problems.append(
                f"ships {entry}: torch/CUDA provide it at import; a second copy breaks "
                f"the ABI (exclude it in repair)"
            )
    beside: dict[str, set[str]] = {}  # folder -> the binaries in it (llama.cpp's libggml*.so)
    for n in binaries:
        beside.setdefault(str(PurePosixPath(n).parent), set()).add(PurePosixPath(n).name)
    vendored = {n for folder, names in beside.items() if folder.endswith(".libs") for n in names}
    for lib in sorted(vendored):
        if not want.policy.is_provided(_unmangle(lib)) and not want.policy.matches(
            lib, want.vendor_allow
        ):
            report.problems.append(f"vendors {lib}, which the package's vendor_allow does not list")
    floor = _MANYLINUX.match(wheel.name.rsplit("-", 1)[-1])
    device = 0
    for entry in binaries:
        try:
            info = inspect_binary(zf.read(entry))
        except ValueError as exc:
            report.problems.append(f"{entry}: unreadable binary: {exc}")
            continue
        device += info.has_device_code
        if PurePosixPath(entry).parent.name.endswith(".libs"):
            continue
        _check_binary(entry, info, want, beside, report)
        if floor and info.glibc and info.glibc > (int(floor[1]), int(floor[2])):
            report.problems.append(
                f"{entry} needs GLIBC_{info.glibc[0]}.{info.glibc[1]}, "
                f"above the {floor[0][:-1]} tag"
            )
    report.problems += _device_problems(device, want, report)


def _device_problems(device: int, want: Expectation, report: Report) -> list[str]:
    """Across binaries: some device code where archs are listed, and (one or some archs per
    binary, each binary checked alone) every listed arch held by one of them."""
    if device == 0 and want.archs.archs:
        return ["no shared object carries CUDA device code (no fatbin)"]
    if not (want.one_arch_per_binary or want.some_archs_per_binary):
        return []
    held = _base(c for found in report.archs.values() for c in found["cubins"])
    listed = _base(want.archs.cubins)
    if missing := [a for base, archs in listed.items() if base not in held for a in archs]:
        key = "one_arch_per_binary" if want.one_arch_per_binary else "some_archs_per_binary"
        why = f"arch.{key}: the binaries together hold {want.archs.listed}"
        return [f"no binary holds {', '.join(missing)} ({why})"]
    return []


def _member_hashes(wheel: Path) -> dict[str, str]:
    """Each member's sha256, read a chunk at a time (a member can be a 1 GB library)."""
    hashes = {}
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            digest = hashlib.sha256()
            with zf.open(info) as member:
                while chunk := member.read(1 << 20):
                    digest.update(chunk)
            hashes[info.filename] = digest.hexdigest()
    return hashes


def member_differences(wheel: Path, other: Path) -> list[str]:
    """Where two wheels differ, member by member: what a rebuild that is not byte-identical
    changed (a changed binary also changes RECORD, which is listed too)."""
    mine, theirs = _member_hashes(wheel), _member_hashes(other)
    out = [f"{n}: only in {wheel.name}" for n in sorted(mine.keys() - theirs.keys())]
    out += [f"{n}: only in the rebuild" for n in sorted(theirs.keys() - mine.keys())]
    out += [f"{n}: differs" for n in sorted(mine.keys() & theirs.keys()) if mine[n] != theirs[n]]
    return out
